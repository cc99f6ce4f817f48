"""The failures the pipeline promises to survive, through the synthesized state machine:
SageMaker throttling and quota errors retried with a new job name per attempt (S3, R1), a
failed job whose missing shards alone are resubmitted (R4, R19), a persistent failure
recorded and announced, a failed shard check named with its error, bad requests stopped by
Plan, and a run id started twice."""

import gzip
import json

import pytest

from batchinfer.pipeline.storage.status_table import (
    FAILED,
    MISSING,
    REJECTED,
    SUCCEEDED,
    StatusTable,
)
from batchinfer.transform.settings import validate_job_name
from stacks.execution_history import EVENTS_OUTSIDE_ROUNDS, EVENTS_PER_ROUND
from tests.support.offline import ApiError, CapacityShortage, FailInputs, LambdaFault, OfflineStack

from .test_happy_path import csv_rows


def manifest_entries(stack: OfflineStack, request: dict) -> list[str]:
    uri = request["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"]
    return json.loads(stack.get(uri))[1:]


def test_throttling_and_quota_errors_retry_with_new_job_names_then_succeed(stack):
    """S3: ThrottlingException and ResourceLimitExceededException on CreateTransformJob are
    retried (RunJob's Retry, which re-runs PrepareJob); R1: each attempt has its own valid
    name, so the job that finally runs never reuses a name."""
    stack.put("input/t/a.csv", csv_rows(40))
    stack.jobs.faults += [
        ApiError("ThrottlingException", "Rate exceeded"),
        ApiError("ResourceLimitExceeded", "The account-level service limit"),
    ]
    execution = stack.run({"input": f"s3://{stack.bucket}/input/t/", "shards": 2}, "throttled")
    assert execution.status == "SUCCEEDED", execution.cause

    names = [request["TransformJobName"] for _, request in stack.jobs.requests]
    assert len(names) == 3 and len(set(names)) == 3
    for name in names:
        assert validate_job_name(name) == name and len(name) <= 63
        assert name.startswith("bi-dev-throttled-r1-")
    assert execution.states_entered().count("PrepareJob") == 3
    assert [stack.jobs.described.get(n, {}).get("TransformJobStatus") for n in names] == [
        None,
        None,
        "Completed",
    ]
    assert execution.output["job"]["name"] == names[-1]
    run = StatusTable.named(stack.table_name).get_run("throttled")
    assert run["run_status"] == SUCCEEDED and run["records_out"] == 40


def test_failed_job_resubmits_only_the_missing_shard_then_succeeds(stack):
    """A job that ends Failed with one shard lost: Verify finds it MISSING and the next
    round's ManifestFile lists that shard alone (R4); the second job completes the run."""
    stack.put("input/once/a.csv", csv_rows(60))
    stack.jobs.faults.append(FailInputs(1))
    execution = stack.run({"input": f"s3://{stack.bucket}/input/once/", "shards": 3}, "once")
    assert execution.status == "SUCCEEDED", execution.cause

    (_, first), (_, second) = stack.jobs.requests
    assert stack.jobs.described[first["TransformJobName"]]["TransformJobStatus"] == "Failed"
    lost = manifest_entries(stack, first)[0]
    assert manifest_entries(stack, second) == [lost]
    assert second["TransformJobName"].startswith("bi-dev-once-r2-")
    items = StatusTable.named(stack.table_name).shards("once")
    assert [item["status"] for item in items] == [SUCCEEDED] * 3
    attempts = {item["name"]: item["attempts"] for item in items}
    assert attempts[lost] == 2
    assert sorted(attempts.values()) == [1, 1, 2]
    assert f"output/once/{lost}.out" in stack.keys("output/once/")
    assert StatusTable.named(stack.table_name).get_run("once")["records_out"] == 60


def test_records_the_model_refuses_fail_the_run_after_one_job(stack):
    """A shard whose records the model refuses (E9): the job fails with a ClientError, a
    data failure, so the run fails at once without a billed resubmission. The RUN item, the
    SNS message, the event and the execution's cause name the file, the record and the
    container's message."""
    stack.put("input/bad/good.csv", csv_rows(10))
    stack.put("input/bad/bad.csv", b"1,2\nbad,3\n")
    execution = stack.run({"input": f"s3://{stack.bucket}/input/bad/"}, "persistent")
    assert execution.status == "FAILED"
    assert execution.error == "DataFailure"
    assert "bad.csv" in execution.cause and "records 1-2" in execution.cause

    assert len(stack.jobs.requests) == 1, "no resubmission for data the model refuses"
    table = StatusTable.named(stack.table_name)
    run = table.get_run("persistent")
    assert run["run_status"] == FAILED
    assert run["error"] == "DataFailure"
    assert "bad.csv" in run["cause"] and "400" in run["cause"] and "row holds 'bad'" in run["cause"]
    assert run["failed_shards"] == ["bad.csv"]
    assert run["failed_job"] == stack.jobs.requests[-1][1]["TransformJobName"]
    statuses = {item["name"]: item["status"] for item in table.shards("persistent")}
    assert statuses == {"bad.csv": MISSING, "good.csv": SUCCEEDED}
    notifications, events = stack.announced()
    (message,) = notifications
    detail = json.loads(message["Message"])
    assert detail["status"] == FAILED and detail["failed_shards"] == ["bad.csv"]
    (event,) = events
    assert event["detail"]["status"] == FAILED and event["detail"]["run_id"] == "persistent"
    assert "output/persistent/_SUCCESS" not in stack.keys("output/")


def test_a_shard_lost_every_round_fails_after_the_last_round(stack):
    """Infrastructure failures (a lost instance) are resubmitted, max_rounds jobs in all,
    each for the missing shard only; then the run fails naming it."""
    stack.put("input/lost/a.csv", csv_rows(10))
    stack.jobs.faults += [FailInputs(1)] * 3
    execution = stack.run({"input": f"s3://{stack.bucket}/input/lost/"}, "lost")
    assert execution.status == "FAILED" and execution.error == "ShardsMissing"
    assert len(stack.jobs.requests) == 3, "max_rounds jobs, then the run gives up"
    assert all(manifest_entries(stack, r) == ["a.csv"] for _, r in stack.jobs.requests)
    run = StatusTable.named(stack.table_name).get_run("lost")
    assert run["run_status"] == FAILED and "InternalServerError" in run["cause"]
    assert run["failed_shards"] == ["a.csv"]
    assert [len(channel) for channel in stack.announced()] == [1, 1]


def test_capacity_failures_wait_longer_each_round_then_succeed(stack):
    """Jobs that end Failed for want of capacity (FailureReason "CapacityError: ..."): the
    run waits before the next round (WaitForCapacity, for the seconds Verify puts in
    ``$.round.wait_seconds``, doubling each round), the third round's job completes."""
    stack.put("input/capacity/a.csv", csv_rows(20))
    stack.jobs.faults += [CapacityShortage()] * 2
    execution = stack.run({"input": f"s3://{stack.bucket}/input/capacity/"}, "capacity")
    assert execution.status == "SUCCEEDED", execution.cause

    names = [request["TransformJobName"] for _, request in stack.jobs.requests]
    assert [name.split("-")[3] for name in names] == ["r1", "r2", "r3"]
    waits = [
        json.loads(e["stateEnteredEventDetails"]["input"])["round"]["wait_seconds"]
        for e in execution.history
        if e.get("stateEnteredEventDetails", {}).get("name") == "WaitForCapacity"
    ]
    assert waits == [1, 2]
    entered = execution.states_entered()
    assert [s for s in entered if s in ("Verify", "WaitForCapacity", "AcquireInstances")] == [
        "AcquireInstances",
        "Verify",
        "WaitForCapacity",
        "AcquireInstances",
        "Verify",
        "WaitForCapacity",
        "AcquireInstances",
        "Verify",
    ]
    (item,) = StatusTable.named(stack.table_name).shards("capacity")
    assert item["status"] == SUCCEEDED and item["attempts"] == 3
    # The waits stay inside the history bound the config checks (stacks/execution_history.py).
    assert len(execution.history) <= EVENTS_OUTSIDE_ROUNDS + 3 * EVENTS_PER_ROUND


def test_a_failed_shard_check_fails_the_run_naming_the_shard_and_its_error(stack):
    """A CountShard whose function dies every try (it is tried three times): the
    CountShards Map tolerates it (on AWS a Map past its threshold fails with
    States.ExceedToleratedFailureThreshold, naming no shard), and Verify reads the failed
    child from the Map's result files and fails the run naming the shard, the error and the
    cause."""
    stack.put("input/check/a.csv", csv_rows(10))
    stack.lambdas.faults += [LambdaFault("count_shard", "before", "Lambda.Unknown")] * 3
    execution = stack.run({"input": f"s3://{stack.bucket}/input/check/"}, "check")
    assert execution.status == "FAILED" and execution.error == "MapItemFailed", execution.cause
    assert "shard checks failed: a.csv (Lambda.Unknown): " in execution.cause
    assert "injected by the offline harness" in execution.cause
    run = StatusTable.named(stack.table_name).get_run("check")
    assert run["run_status"] == FAILED and "a.csv (Lambda.Unknown)" in run["cause"]


def test_a_failed_split_fails_the_run_naming_the_object_and_its_error(stack):
    """SplitObject refuses an object that is not the gzip the request says: the SplitInputs
    Map tolerates the failed child (on AWS its own failure names no object), and CheckSplits
    reads it from the Map's result files and fails the run naming the object and the error;
    the other object's split does not make the run go on."""
    stack.put("input/split/a.csv.gz", gzip.compress(csv_rows(10), mtime=0))
    stack.put("input/split/b.csv", b"not gzip at all\n")
    request = {"input": f"s3://{stack.bucket}/input/split/", "compression_type": "Gzip"}
    execution = stack.run(request, "split")
    assert execution.status == "FAILED" and execution.error == "MapItemFailed", execution.cause
    assert f"s3://{stack.bucket}/input/split/b.csv (InputError): " in execution.cause
    assert "Collect" not in execution.states_entered()
    assert StatusTable.named(stack.table_name).get_run("split")["run_status"] == FAILED


@pytest.mark.parametrize(
    ("request_of", "named"),
    [
        (lambda bucket: {"input": f"s3://{bucket}/input/x/", "bogus": 1}, "'bogus'"),
        (lambda bucket: {"input": "https//not-a-uri"}, "input"),
        (lambda bucket: {"input": "s3://someone-elses-bucket/input/x/"}, "input"),
        (lambda bucket: {"input": f"s3://{bucket}/input/nothing-here/"}, "no objects under"),
        (lambda bucket: {"input": f"s3://{bucket}/input/empty/"}, "every object"),
    ],
    ids=["unknown-key", "bad-uri", "foreign-bucket", "no-input", "empty-input"],
)
def test_bad_request_fails_plan_with_a_message_naming_it(stack, request_of, named):
    """Plan rejects the request before any work: the execution fails from Plan with a
    message naming the key or input at fault, and the RUN item says REJECTED (the run id
    stays free for the corrected request)."""
    stack.put("input/x/a.csv", csv_rows(3))
    stack.put("input/empty/a.csv", b"")
    execution = stack.run(request_of(stack.bucket), "bad-request")
    assert execution.status == "FAILED"
    assert execution.error in ("ValidationError", "InputError")
    assert named in execution.cause
    entered = execution.states_entered()
    assert entered[0] == "Plan" and "SplitInputs" not in entered
    assert stack.lambdas.events_of("split_object") == [] and stack.jobs.requests == []
    run = StatusTable.named(stack.table_name).get_run("bad-request")
    assert run["run_status"] == REJECTED and named in run["cause"]


def test_same_run_id_twice_does_no_work_and_overwrites_nothing(stack):
    """The second execution with a taken run id stops at Plan (DuplicateRun): no split, no
    job, the first run's outputs and RUN item untouched."""
    stack.put("input/dup/a.csv", csv_rows(30))
    request = {"input": f"s3://{stack.bucket}/input/dup/", "run_id": "nightly", "shards": 2}
    first = stack.run(request, "first")
    assert first.status == "SUCCEEDED", first.cause
    table = StatusTable.named(stack.table_name)
    run_before = table.get_run("nightly")
    shards_before = table.shards("nightly")
    keys = stack.keys("output/nightly/") + stack.keys("runs/nightly/") + stack.keys("shards/")
    objects_before = {k: stack.s3.head_object(Bucket=stack.bucket, Key=k)["ETag"] for k in keys}
    stack.announced()
    splits, jobs = len(stack.lambdas.events_of("split_object")), len(stack.jobs.requests)

    stack.put("input/dup/a.csv", csv_rows(31))  # even with new data, the run id is taken
    second = stack.run(request, "second")
    assert second.status == "FAILED"
    assert second.error == "RunAlreadyExists"
    assert "nightly" in second.cause and first.arn in second.cause
    assert second.states_entered() == ["Plan", "DuplicateRun"]
    assert (
        len(stack.lambdas.events_of("split_object")) == splits and len(stack.jobs.requests) == jobs
    )
    assert table.get_run("nightly") == run_before
    assert table.shards("nightly") == shards_before
    keys = stack.keys("output/nightly/") + stack.keys("runs/nightly/") + stack.keys("shards/")
    assert {k: stack.s3.head_object(Bucket=stack.bucket, Key=k)["ETag"] for k in keys} == (
        objects_before
    )
    assert stack.announced() == ([], []), "the first run's subscribers hear nothing"
