"""The failure recorder: requests that fail before Plan (REJECTED, the id stays free),
executions that do not own the run id, executions that ended without a Catch (timed out,
aborted, failed with an uncatchable error), and announcements sent once when a step runs
again."""

import json

import pytest

from batchinfer.pipeline.contract.state import Failure
from batchinfer.pipeline.steps.record_failure import record_ended_execution, record_failure
from batchinfer.pipeline.storage.status_table import ABORTED, FAILED, REJECTED, RUNNING, SUCCEEDED
from tests.support.run_state import example_plan

EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:"
PLAN = example_plan(run_id="r").to_state()


def test_plan_failure_is_recorded_as_rejected_under_the_request_run_id(account):
    state = {
        "input": "s3://x",
        "run_id": "bad-1",
        "error": {
            "Error": "ValidationError",
            "Cause": json.dumps({"errorMessage": "input: 's3://x' is outside"}),
        },
    }
    result = record_failure(
        state, execution=EXECUTION + "e", execution_name="e", **account.failure_clients()
    )
    assert result == Failure("ValidationError", "run bad-1: input: 's3://x' is outside")
    run = account.table.get_run("bad-1")
    assert run["run_status"] == REJECTED and run["execution_arn"] == EXECUTION + "e"
    assert run["started_at"], "listed by the by-status index"
    notifications, events = account.announced()
    assert events[0]["detail"]["error"] == "ValidationError"
    assert notifications[0]["Subject"] == "batchinfer run bad-1 REJECTED"


def test_a_rejected_request_leaves_its_run_id_to_the_corrected_one(account):
    state = {"run_id": "fix-me", "error": {"Error": "ValidationError", "Cause": "bad key"}}
    record_failure(
        state, execution=EXECUTION + "e1", execution_name="e1", **account.failure_clients()
    )
    again = record_failure(
        state, execution=EXECUTION + "e2", execution_name="e2", **account.failure_clients()
    )
    assert "not this execution's" not in again.cause, "a second rejection is recorded too"
    account.table.create_run("fix-me", EXECUTION + "e3")
    assert account.table.get_run("fix-me")["run_status"] == RUNNING


def test_recording_again_after_it_ran_announces_once(account):
    """RecordFailure retried by Step Functions after it ran (its answer was lost): the
    record is the same and the event and the message went out once."""
    account.table.create_run("r", EXECUTION + "e")
    state = {
        "plan": PLAN,
        "error": {"Error": "ShardsMissing", "Cause": json.dumps({"errorMessage": "gone"})},
    }
    first = record_failure(
        state, execution=EXECUTION + "e", execution_name="e", **account.failure_clients()
    )
    second = record_failure(
        state, execution=EXECUTION + "e", execution_name="e", **account.failure_clients()
    )
    assert first == second
    notifications, events = account.announced()
    assert len(notifications) == 1 and len(events) == 1
    assert account.table.get_run("r")["run_status"] == FAILED


def test_a_failed_send_is_sent_again_by_the_retry(account, monkeypatch):
    account.table.create_run("r", EXECUTION + "e")
    state = {"plan": PLAN, "error": {"Error": "ShardsMissing", "Cause": "gone"}}
    clients = account.failure_clients()
    publish = account.sns.publish
    calls = []

    def flaky(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            raise ConnectionError("SNS unreachable")
        return publish(**kwargs)

    monkeypatch.setattr(account.sns, "publish", flaky)
    with pytest.raises(ConnectionError):
        record_failure(state, execution=EXECUTION + "e", execution_name="e", **clients)
    record_failure(state, execution=EXECUTION + "e", execution_name="e", **clients)
    notifications, events = account.announced()
    assert len(notifications) == 1 and len(events) == 1, "the event was not sent twice"


def test_a_stopped_job_aborts_the_run(account):
    account.table.create_run("r", EXECUTION + "e")
    state = {"plan": PLAN, "error": {"Error": "JobStopped", "Cause": "stopped"}}
    record_failure(
        state, execution=EXECUTION + "e", execution_name="e", **account.failure_clients()
    )
    assert account.table.get_run("r")["run_status"] == ABORTED


def test_another_executions_run_is_left_alone(account):
    account.table.create_run("shared", EXECUTION + "owner")
    state = {"run_id": "shared", "error": {"Error": "ValidationError", "Cause": "bad"}}
    result = record_failure(
        state, execution=EXECUTION + "other", execution_name="other", **account.failure_clients()
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
        **account.failure_clients(),
    )
    assert result.error == "ExecutionTimedOut"
    assert account.table.get_run("slow")["run_status"] == FAILED


def test_aborted_execution_marks_its_running_run_aborted(account):
    account.table.create_run("stop", EXECUTION + "e3")
    event = _status_change("e3", "ABORTED", {"input": "s3://b/input/", "run_id": "stop"})
    assert record_ended_execution(event, **account.failure_clients()).error == "ExecutionAborted"
    assert account.table.get_run("stop")["run_status"] == ABORTED


def test_an_execution_failed_without_a_catch_closes_its_run_with_the_cause(account):
    """States.Runtime and States.DataLimitExceeded cannot be caught: the end-of-run rule
    closes the run item and announces it once."""
    account.table.create_run("lost", EXECUTION + "e4")
    event = _status_change("e4", "FAILED", {"input": "s3://b/input/", "run_id": "lost"})
    event["detail"] |= {"error": "States.Runtime", "cause": "path $.round.complete not found"}
    result = record_ended_execution(event, **account.failure_clients())
    assert result.error == "States.Runtime" and "$.round.complete" in result.cause
    run = account.table.get_run("lost")
    assert run["run_status"] == FAILED and run["error"] == "States.Runtime"
    assert record_ended_execution(event, **account.failure_clients()) is None, "closed once"
    notifications, events = account.announced()
    assert len(notifications) == 1 and len(events) == 1


def test_finished_runs_are_not_touched_by_late_status_events(account):
    account.table.create_run("done", EXECUTION + "e2")
    account.table.update_run("done", EXECUTION + "e2", {"run_status": SUCCEEDED})
    event = _status_change("e2", "ABORTED", {"input": "s3://b/input/", "run_id": "done"})
    assert record_ended_execution(event, **account.failure_clients()) is None
    assert account.table.get_run("done")["run_status"] == SUCCEEDED
    assert account.table.runs(SUCCEEDED)[0]["run_id"] == "done"
