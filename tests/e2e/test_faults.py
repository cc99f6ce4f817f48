"""The faults AWS produces, injected into the synthesized state machine offline, and what
each leaves behind: the run item, how many SNS messages and run-finished events went out
(exactly one each), the outputs (complete with ``_SUCCESS``, or no ``_SUCCESS``), and how
many jobs SageMaker started (what the user pays for). docs/errors.md is the table these
scenarios check."""

import json

import pytest

from batchinfer.pipeline.storage.instance_leases import InstanceLeases
from batchinfer.pipeline.storage.status_table import (
    ABORTED,
    FAILED,
    SUCCEEDED,
    StatusTable,
)
from tests.support.offline import (
    ApiError,
    Dies,
    FailInputs,
    LambdaFault,
    OfflineStack,
    StopExecution,
    StopJob,
)

from .conftest import INSTANCE_TYPE
from .test_happy_path import csv_rows

# Every Lambda step of the definition; record_failure runs only when a run fails.
STEPS = (
    "plan",
    "split_object",
    "collect",
    "acquire_instances",
    "prepare_job",
    "release_instances",
    "count_shard",
    "verify",
    "merge_object",
    "finalize",
)


def outcome(stack: OfflineStack, run_id: str) -> dict:
    """What a scenario is judged by."""
    notifications, events = stack.announced()
    run = StatusTable.named(stack.table_name).get_run(run_id) or {}
    return {
        "status": run.get("run_status"),
        "messages": len(notifications),
        "events": len(events),
        "success_marker": f"output/{run_id}/_SUCCESS" in stack.keys(f"output/{run_id}/"),
        "jobs": len(stack.jobs.started),
    }


def succeeded_once(jobs: int = 1) -> dict:
    return {
        "status": SUCCEEDED,
        "messages": 1,
        "events": 1,
        "success_marker": True,
        "jobs": jobs,
    }


def put_input(stack: OfflineStack, run_id: str, rows: int = 30) -> dict:
    stack.put(f"input/{run_id}/a.csv", csv_rows(rows))
    return {"input": f"s3://{stack.bucket}/input/{run_id}/", "shards": 2, "merge": True}


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("step", STEPS)
def test_a_lambda_service_error_is_retried_and_the_run_completes_once(stack, step, when):
    """Lambda.ServiceException before the handler ran, or after it ran with its answer
    lost: Step Functions runs the step again; the run succeeds with one job, one message,
    one event, and its output is complete; the instances it leased are back in the budget
    (an acquire or release run again takes or returns them once)."""
    run_id = f"{step.replace('_', '-')}-{when}"
    stack.lambdas.faults.append(LambdaFault(step, when))
    execution = stack.run(put_input(stack, run_id), run_id)
    assert execution.status == "SUCCEEDED", execution.cause
    assert len(stack.lambdas.events_of(step)) >= 2, "the step ran again"
    assert outcome(stack, run_id) == succeeded_once()
    assert stack.get(f"s3://{stack.bucket}/output/{run_id}/a.csv.out").count(b"\n") == 30
    leases = InstanceLeases(StatusTable.named(stack.table_name).table)
    assert leases.held(INSTANCE_TYPE) == {}


@pytest.mark.parametrize(
    ("run_id", "fault"),
    [
        # Dead right after its upload completed (Lambda.Unknown, as out of memory).
        ("merge-died", Dies("merge_object", "s3.CompleteMultipartUpload")),
        # Out of its 900 s after it ran (the error Lambda reports for a timeout).
        ("merge-timed-out", LambdaFault("merge_object", "after", "Sandbox.Timedout")),
    ],
)
def test_a_merge_run_again_after_it_ran_writes_each_output_once_and_whole(stack, run_id, fault):
    """MergeObject retried after it merged (R12: each input object gives one output named
    after it): it merges the same parts into the same key again, so each input object has
    one whole output with every record, no upload is left open, and the run succeeds once."""
    stack.lambdas.faults.append(fault)
    stack.put(f"input/{run_id}/b.csv", csv_rows(12, offset=100))
    execution = stack.run(put_input(stack, run_id), run_id)
    assert execution.status == "SUCCEEDED", execution.cause
    assert len(stack.lambdas.events_of("merge_object")) == 3, "one of the two run twice"
    assert outcome(stack, run_id) == succeeded_once()
    output = f"output/{run_id}/"
    assert stack.keys(output) == [
        f"{output}{name}" for name in ("_SUCCESS", "_manifest.json", "a.csv.out", "b.csv.out")
    ]
    assert stack.get(f"s3://{stack.bucket}/{output}a.csv.out").count(b"\n") == 30
    assert stack.get(f"s3://{stack.bucket}/{output}b.csv.out").count(b"\n") == 12
    assert execution.output["result"]["records_out"] == 42
    uploads = stack.s3.list_multipart_uploads(Bucket=stack.bucket, Prefix=output)
    assert uploads.get("Uploads", []) == []


@pytest.mark.parametrize("when", ["before", "after"])
def test_recording_a_failure_again_announces_it_once(stack, when):
    """RecordFailure retried after a service error: the run is FAILED once, announced once."""
    stack.put("input/rf/bad.csv", b"1,2\nbad,3\n")
    stack.lambdas.faults.append(LambdaFault("record_failure", when))
    execution = stack.run({"input": f"s3://{stack.bucket}/input/rf/"}, f"rf-{when}")
    assert execution.status == "FAILED" and execution.error == "DataFailure"
    assert outcome(stack, f"rf-{when}") == {
        "status": FAILED,
        "messages": 1,
        "events": 1,
        "success_marker": False,
        "jobs": 1,
    }


def test_a_throttled_split_child_is_retried(stack):
    """Lambda.TooManyRequestsException in the split Map (tolerated failures 0): retried, so
    one throttled child does not fail the Map and the run."""
    stack.lambdas.faults.append(
        LambdaFault("split_object", "before", "Lambda.TooManyRequestsException")
    )
    execution = stack.run(put_input(stack, "throttled-split"), "throttled-split")
    assert execution.status == "SUCCEEDED", execution.cause
    assert outcome(stack, "throttled-split") == succeeded_once()


def test_a_throttled_create_is_retried_with_a_new_name(stack):
    stack.jobs.faults.append(ApiError("ThrottlingException", "Rate exceeded"))
    execution = stack.run(put_input(stack, "throttled-create"), "throttled-create")
    assert execution.status == "SUCCEEDED", execution.cause
    assert len(stack.jobs.requests) == 2, "refused once, then accepted"
    assert outcome(stack, "throttled-create") == succeeded_once()


def test_a_validation_error_of_the_api_is_not_retried(stack):
    """A permanent API error (here an instance type the job cannot use) fails the run at
    once with SageMaker's message; nothing is retried or started."""
    stack.jobs.faults.append(
        ApiError("ValidationException", "The instance type ml.p9.huge is not supported")
    )
    execution = stack.run(put_input(stack, "invalid"), "invalid")
    assert execution.status == "FAILED" and execution.error == "BatchInfer.PermanentApiError"
    assert "ml.p9.huge" in execution.cause
    assert len(stack.jobs.requests) == 1
    assert outcome(stack, "invalid") == {
        "status": FAILED,
        "messages": 1,
        "events": 1,
        "success_marker": False,
        "jobs": 0,
    }


def test_a_job_failing_for_its_data_fails_the_run_after_one_job(stack):
    stack.put("input/data/a.csv", b"1,2\n3,x\n")
    execution = stack.run({"input": f"s3://{stack.bucket}/input/data/"}, "data")
    assert execution.status == "FAILED" and execution.error == "DataFailure"
    assert "a.csv" in execution.cause and "records 1-2" in execution.cause
    assert outcome(stack, "data") == {
        "status": FAILED,
        "messages": 1,
        "events": 1,
        "success_marker": False,
        "jobs": 1,
    }


def test_a_job_failing_for_its_infrastructure_resubmits_the_missing_shard(stack):
    stack.jobs.faults.append(FailInputs(1))
    execution = stack.run(put_input(stack, "infra"), "infra")
    assert execution.status == "SUCCEEDED", execution.cause
    assert outcome(stack, "infra") == succeeded_once(jobs=2)


def test_a_job_stopped_from_outside_aborts_the_run_without_a_round(stack):
    stack.jobs.faults.append(StopJob())
    execution = stack.run(put_input(stack, "stopped-job"), "stopped-job")
    assert execution.status == "FAILED" and execution.error == "JobStopped"
    assert outcome(stack, "stopped-job") == {
        "status": ABORTED,
        "messages": 1,
        "events": 1,
        "success_marker": False,
        "jobs": 1,
    }


def test_stopping_the_execution_mid_job_aborts_the_run(stack):
    """StopExecution while the job runs: the job is stopped (S6), no Catch runs, and the
    end-of-run rule marks the run ABORTED and announces it once."""
    stack.jobs.faults.append(StopExecution())
    execution = stack.run(put_input(stack, "stopped-run"), "stopped-run")
    assert execution.status == "ABORTED"
    assert stack.jobs.described[stack.jobs.started[0]]["TransformJobStatus"] == "Stopped"
    assert outcome(stack, "stopped-run") == {
        "status": ABORTED,
        "messages": 1,
        "events": 1,
        "success_marker": False,
        "jobs": 1,
    }


def test_an_uncatchable_error_is_closed_by_the_end_of_run_rule(stack):
    """Verify answers a round without ``complete``: the AllShardsDone Choice cannot read
    it (States.Runtime in AWS), which no Catch takes. The end-of-run rule closes the run
    item with the error and announces it once."""
    stack.lambdas.faults.append(LambdaFault("verify", "answer", answer={"number": 1}))
    execution = stack.run(put_input(stack, "runtime"), "runtime")
    assert execution.status == "FAILED"
    result = outcome(stack, "runtime")
    assert result == {
        "status": FAILED,
        "messages": 1,
        "events": 1,
        "success_marker": False,
        "jobs": 1,
    }
    run = StatusTable.named(stack.table_name).get_run("runtime")
    assert run["error"] == execution.error


def test_a_request_near_the_limits_keeps_the_state_small(stack):
    """16 environment entries of 8 KB each (128 KB): carried once, in the job request, so
    the largest state stays well below Step Functions' 256 KiB."""
    environment = {f"BIG_{i}": "x" * 8192 for i in range(16)}
    request = put_input(stack, "large") | {"environment": environment}
    execution = stack.run(request, "large")
    assert execution.status == "SUCCEEDED", execution.cause
    largest = execution.largest_state()
    assert 128 * 1024 < largest < 160 * 1024, largest
    ((_, job),) = stack.jobs.requests
    assert job["Environment"] == environment
    assert outcome(stack, "large") == succeeded_once()
    plan = json.loads(stack.get(f"s3://{stack.bucket}/runs/large/environment.json"))
    assert plan == environment
