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
    RUNNING,
    SUCCEEDED,
    StatusTable,
)
from stacks.execution_history import EVENTS_PER_JOB_RETRY
from stacks.workflow import FIND_JOB_RETRIES
from tests.support.offline import (
    AnswerLost,
    ApiError,
    Dies,
    FailInputs,
    LambdaFault,
    OfflineStack,
    RuntimeLimit,
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


def test_a_merge_that_fails_every_try_fails_the_run_naming_its_input(stack):
    """MergeObject dead on each of its 3 tries for both inputs: the MergeOutputs Map
    tolerates the failed children (on AWS its own failure would name no input), and
    CheckMerges fails the run naming each input with its error; no _SUCCESS is written."""
    stack.lambdas.faults += [LambdaFault("merge_object", "before", "Lambda.Unknown")] * 6
    stack.put("input/merge-fails/b.csv", csv_rows(12, offset=100))
    execution = stack.run(put_input(stack, "merge-fails"), "merge-fails")
    assert execution.status == "FAILED" and execution.error == "MapItemFailed", execution.cause
    assert "merging outputs failed" in execution.cause
    for name in ("a.csv", "b.csv"):
        assert f"input/merge-fails/{name} (Lambda.Unknown)" in execution.cause
    assert len(stack.lambdas.events_of("merge_object")) == 6
    assert "Finalize" not in execution.states_entered()
    assert "output/merge-fails/_SUCCESS" not in stack.keys("output/merge-fails/")
    run = StatusTable.named(stack.table_name).get_run("merge-fails")
    assert run["run_status"] == FAILED


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
    """Lambda.TooManyRequestsException in the split Map: retried, so one throttled child
    does not fail (CheckSplits would fail the run naming it) and the run succeeds."""
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
    # Looked for first (not found: it was refused); the attempt with its lookup stays
    # within what stacks/execution_history.py counts for a retry.
    assert len(stack.jobs.looked_up) == 1 + FIND_JOB_RETRIES
    starts = [i for i, e in enumerate(execution.history) if e["type"] == "ParallelStateStarted"]
    assert len(starts) == 2 and starts[1] - starts[0] <= EVENTS_PER_JOB_RETRY


@pytest.mark.parametrize("code", ["SdkClientException", "InternalFailure"])
def test_a_create_whose_answer_was_lost_is_adopted_not_run_again(stack, code):
    """CreateTransformJob went through but its answer was lost (no response, or a 5xx): the
    job the attempt named runs; it is found by that name and waited for, not created again
    under a new name, so one job runs and is paid for, and the run succeeds once."""
    stack.jobs.faults.append(AnswerLost(code))
    run_id = f"lost-{code.lower()}"
    execution = stack.run(put_input(stack, run_id), run_id)
    assert execution.status == "SUCCEEDED", execution.cause
    assert len(stack.jobs.requests) == 1, "the job is not created again"
    assert stack.jobs.looked_up[0] == stack.jobs.started[0], "found by its name"
    assert outcome(stack, run_id) == succeeded_once()
    assert stack.get(f"s3://{stack.bucket}/output/{run_id}/a.csv.out").count(b"\n") == 30
    assert InstanceLeases(StatusTable.named(stack.table_name).table).held(INSTANCE_TYPE) == {}


def test_an_adopted_job_that_fails_is_handled_as_a_failed_job(stack):
    """The adopted job (its Create's answer lost) loses an instance: it fails the attempt as
    a Failed .sync job does (BatchInfer.AdoptedJobFailed, its Describe response as the
    Cause), so its instances go back and Verify resubmits the shard without output."""
    stack.jobs.faults.append(AnswerLost("InternalFailure", then=FailInputs(1)))
    execution = stack.run(put_input(stack, "lost-failed"), "lost-failed")
    assert execution.status == "SUCCEEDED", execution.cause
    assert "AdoptedTransformJobFailed" in execution.states_entered()
    assert outcome(stack, "lost-failed") == succeeded_once(jobs=2)
    assert InstanceLeases(StatusTable.named(stack.table_name).table).held(INSTANCE_TYPE) == {}


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


def test_a_processing_job_stopped_at_its_runtime_limit_is_a_failure_with_a_new_round(stack):
    """SageMaker stops a processing job that reaches its MaxRuntimeInSeconds: it ends
    Stopped, as one stopped by a person does, but its runtime reached the limit, so it is a
    job failure: the next round scores the shards without output and the run completes."""
    stack.jobs.faults.append(RuntimeLimit())
    request = put_input(stack, "runtime-limit") | {"engine": "processing"}
    execution = stack.run(request, "runtime-limit")
    assert execution.status == "SUCCEEDED", execution.cause
    assert stack.jobs.described[stack.jobs.started[0]]["ProcessingJobStatus"] == "Stopped"
    assert outcome(stack, "runtime-limit") == succeeded_once(jobs=2)


def test_a_processing_job_stopped_at_its_runtime_limit_each_round_fails_the_run(stack):
    """A job stopped at its runtime limit in every round: max_rounds jobs, then the run
    FAILED (not ABORTED: nobody stopped it), its cause saying the limit was reached."""
    stack.jobs.faults += [RuntimeLimit()] * 3
    request = put_input(stack, "runtime-out") | {"engine": "processing"}
    execution = stack.run(request, "runtime-out")
    assert execution.status == "FAILED" and execution.error == "ShardsMissing"
    assert "reached its runtime limit" in execution.cause
    run = StatusTable.named(stack.table_name).get_run("runtime-out")
    assert "reached its runtime limit" in run["cause"]
    assert outcome(stack, "runtime-out") == {
        "status": FAILED,
        "messages": 1,
        "events": 1,
        "success_marker": False,
        "jobs": 3,
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


def test_an_end_of_run_recording_failing_every_try_is_kept_for_a_redrive(stack):
    """StopExecution, and the failure recorder fails each of Lambda's three tries of the
    end-of-run rule's event: Lambda sends the invocation record to the rule's dead-letter
    queue (whose depth alarms) instead of dropping it, and the event it holds, invoked
    again, closes the run and announces it once."""
    stack.jobs.faults.append(StopExecution())
    stack.lambdas.faults.extend([LambdaFault("record_failure", "before")] * 3)
    execution = stack.run(put_input(stack, "kept"), "kept")
    assert execution.status == "ABORTED"
    assert StatusTable.named(stack.table_name).get_run("kept")["run_status"] == RUNNING
    url = next(u for k, u in stack.queue_urls.items() if k.startswith("TriggersRunEnded"))
    (message,) = stack.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    record = json.loads(message["Body"])
    context = record["requestContext"]
    assert (context["condition"], context["approximateInvokeCount"]) == ("RetriesExhausted", 3)
    assert record["requestPayload"]["detail"]["status"] == "ABORTED"
    function_arn = context["functionArn"].removesuffix(":$LATEST")
    stack.lambdas.invoke_event(function_arn, record["requestPayload"])
    assert outcome(stack, "kept") == {
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
