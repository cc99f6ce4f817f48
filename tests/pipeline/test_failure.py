"""The failure recorder: runs that fail before Plan, executions that do not own the run id,
and executions that timed out (no Catch runs then)."""

import json

from batchinfer.pipeline.record_failure import record_ended_execution, record_failure
from batchinfer.pipeline.state import Failure
from batchinfer.pipeline.status_table import FAILED, RUNNING, SUCCEEDED

EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:"


def _clients(account):
    return {
        "env": account.env,
        "table": account.table,
        "events": account.events,
        "sns": account.sns,
    }


def test_plan_failure_is_recorded_under_the_request_run_id(account):
    state = {
        "input": "s3://x",
        "run_id": "bad-1",
        "error": {
            "Error": "ValidationError",
            "Cause": json.dumps({"errorMessage": "input: 's3://x' is outside"}),
        },
    }
    result = record_failure(
        state, execution=EXECUTION + "e", execution_name="e", **_clients(account)
    )
    assert result == Failure("ValidationError", "run bad-1: input: 's3://x' is outside")
    run = account.table.get_run("bad-1")
    assert run["run_status"] == FAILED and run["execution_arn"] == EXECUTION + "e"
    notifications, events = account.announced()
    assert events[0]["detail"]["error"] == "ValidationError"
    assert notifications[0]["Subject"] == "batchinfer run bad-1 FAILED"


def test_another_executions_run_is_left_alone(account):
    account.table.create_run("shared", EXECUTION + "owner")
    state = {"run_id": "shared", "error": {"Error": "ValidationError", "Cause": "bad"}}
    result = record_failure(
        state, execution=EXECUTION + "other", execution_name="other", **_clients(account)
    )
    assert "not this execution's" in result.cause
    assert account.table.get_run("shared")["run_status"] == RUNNING
    assert account.announced() == ([], [])


def _status_change(name, status, request):
    return {
        "detail-type": "Step Functions Execution Status Change",
        "detail": {
            "name": name,
            "status": status,
            "executionArn": EXECUTION + name,
            "input": json.dumps(request),
        },
    }


def test_timed_out_execution_marks_its_running_run_failed(account):
    account.table.create_run("slow", EXECUTION + "e1")
    result = record_ended_execution(
        _status_change("e1", "TIMED_OUT", {"input": "s3://b/input/", "run_id": "slow"}),
        **_clients(account),
    )
    assert result.error == "ExecutionTimedOut"
    assert account.table.get_run("slow")["run_status"] == FAILED


def test_finished_runs_are_not_touched_by_late_status_events(account):
    account.table.create_run("done", EXECUTION + "e2")
    account.table.update_run("done", EXECUTION + "e2", {"run_status": SUCCEEDED})
    event = _status_change("e2", "ABORTED", {"input": "s3://b/input/", "run_id": "done"})
    assert record_ended_execution(event, **_clients(account)) is None
    assert account.table.get_run("done")["run_status"] == SUCCEEDED
    assert account.table.runs(SUCCEEDED)[0]["run_id"] == "done"
