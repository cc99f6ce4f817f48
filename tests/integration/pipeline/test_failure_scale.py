"""The failure recorder on runs of many shards: it closes the run, returns its lease and
deletes its model before it reads any SHARD item, reads a bounded number of them whatever
the run's size (the Lambda has 256 MB and 120 s; a run may have 100,000 shards and more),
says when the failed shards it names are not all, and each action happens once when the
step runs again."""

import json
import tracemalloc

import pytest
from botocore.exceptions import ClientError

from batchinfer.pipeline.steps import record_failure as step
from batchinfer.pipeline.steps.record_failure import record_ended_execution, record_failure
from batchinfer.pipeline.storage.instance_leases import InstanceLeases
from batchinfer.pipeline.storage.status_table import (
    FAILED,
    MISSING,
    RECORDING_FAILURE,
    SUCCEEDED,
)
from tests.support.run_state import example_plan

EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:"
TYPE = "ml.m5.xlarge"
# Small bounds so that moto holds runs several times larger than what is read.
READ, PAGE = 100, 40


@pytest.fixture
def bounds(monkeypatch):
    monkeypatch.setattr(step, "SHARDS_READ", READ)
    monkeypatch.setattr(step, "SHARDS_PAGE", PAGE)


class ShardReads:
    """The status table's Query calls (the recorder queries SHARD items only): items read
    (ScannedCount) and returned, the Limit of each; ``fail`` makes them raise as DynamoDB
    does when throttled."""

    def __init__(self, table):
        self.query, self.read, self.returned, self.limits, self.fail = table.query, 0, 0, [], False

    def __call__(self, **kwargs):
        if self.fail:
            error = {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}
            raise ClientError({"Error": error}, "Query")
        answer = self.query(**kwargs)
        self.limits.append(kwargs.get("Limit"))
        self.read += answer["ScannedCount"]
        self.returned += answer["Count"]
        return answer


@pytest.fixture
def reads(account, monkeypatch):
    spy = ShardReads(account.table.table)
    monkeypatch.setattr(account.table.table, "query", spy)
    return spy


def failing_run(account, run_id, shards, missing=()):
    """A RUNNING run with its output, holding 2 instances of the budget and a model of its
    own, with ``shards`` SHARD items: those numbered in ``missing`` MISSING, the others
    SUCCEEDED."""
    execution = EXECUTION + run_id
    account.table.create_run(run_id, execution, output=example_plan(run_id=run_id).output)
    leases = InstanceLeases(account.table.table)
    granted = leases.acquire(
        TYPE, run_id, 2, 8, execution=execution, round_number=1, lease_seconds=3600
    )
    assert granted.granted
    account.table.mark_admitted(run_id, execution, TYPE)
    model = f"{run_id}-model"
    account.sagemaker.create_model(
        ModelName=model,
        ExecutionRoleArn="arn:aws:iam::123456789012:role/jobs",
        PrimaryContainer={"Image": account.env.image_uri, "ModelDataUrl": "s3://m/model.tar.gz"},
    )
    account.table.update_run(run_id, execution, {"run_model": model})
    with account.table.shard_writer(run_id) as put:
        for number in range(shards):
            status = MISSING if number in missing else SUCCEEDED
            put(number, {"name": f"part-{number:06d}.csv", "status": status})


def catch_path(account, run_id):
    """RecordFailure as the state machine's Catch path calls it."""
    state = {
        "plan": example_plan(run_id=run_id).to_state(),
        "error": {"Error": "ShardsMissing", "Cause": "shards failed every round"},
    }
    return record_failure(
        state,
        execution=EXECUTION + run_id,
        execution_name=run_id,
        **account.failure_clients(),
    )


def end_of_run_rule(account, run_id):
    """RecordFailure as the end-of-run rule calls it, for an execution that timed out."""
    event = {
        "detail-type": "Step Functions Execution Status Change",
        "detail": {
            "name": run_id,
            "status": "TIMED_OUT",
            "executionArn": EXECUTION + run_id,
            "input": json.dumps({"input": "s3://b/input/", "run_id": run_id}),
        },
    }
    return record_ended_execution(event, **account.failure_clients())


def model_exists(account, run_id):
    try:
        account.sagemaker.describe_model(ModelName=f"{run_id}-model")
    except ClientError:
        return False
    return True


@pytest.mark.parametrize("shards", [30, 300, 1_000])
def test_reading_failed_shards_is_bounded_whatever_the_shard_count(account, bounds, reads, shards):
    failing_run(account, "big", shards, missing={5, shards - 1})
    catch_path(account, "big")
    assert reads.read <= READ and max(reads.limits) <= PAGE
    assert reads.returned <= 2, "only MISSING items come back"
    run = account.table.get_run("big")
    assert run["run_status"] == FAILED
    all_read = shards <= READ
    expected = (
        ["part-000005.csv", f"part-{shards - 1:06d}.csv"] if all_read else ["part-000005.csv"]
    )
    assert run["failed_shards"] == expected
    assert run.get("failed_shards_cut", False) is not all_read, "says the list is cut"
    _, (event,) = account.announced()
    assert event["detail"]["failed_shards"] == expected
    assert event["detail"].get("failed_shards_cut", False) is not all_read


def test_at_most_the_shown_number_of_failed_shards_is_named(account, bounds, reads):
    failing_run(account, "many", 60, missing=set(range(60)))
    catch_path(account, "many")
    run = account.table.get_run("many")
    assert run["failed_shards"] == [f"part-{n:06d}.csv" for n in range(step.SHOWN_SHARDS)]
    assert run["failed_shards_cut"] is True
    assert reads.read <= READ


@pytest.mark.parametrize("path", [catch_path, end_of_run_rule])
def test_a_run_is_closed_before_its_shards_are_read_and_a_retry_finishes(account, reads, path):
    """The SHARD items cannot be read (throttled): the run is FAILED, its instances are back
    in the budget and its model is gone all the same; the step's retry (Step Functions'
    for the Catch path, Lambda's for the end-of-run rule) names the shards and announces."""
    failing_run(account, "r", 3, missing={1})
    reads.fail = True
    with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        path(account, "r")
    run = account.table.get_run("r")
    assert run["run_status"] == FAILED
    assert InstanceLeases(account.table.table).held(TYPE) == {}
    assert not model_exists(account, "r")
    assert account.announced() == ([], []), "announced once the shards are named"
    reads.fail = False
    failure = path(account, "r")
    assert failure is not None and failure.error in ("ShardsMissing", "ExecutionTimedOut")
    run = account.table.get_run("r")
    assert run["failed_shards"] == ["part-000001.csv"] and RECORDING_FAILURE not in run
    notifications, events = account.announced()
    assert len(notifications) == 1 and len(events) == 1
    assert events[0]["detail"]["failed_shards"] == ["part-000001.csv"]
    if path is end_of_run_rule:
        assert path(account, "r") is None, "then the rule leaves the closed run alone"


def test_the_end_of_run_rule_finishes_what_the_catch_path_began(account, reads):
    """RecordFailure closed the run but could not read its shards, so the execution failed
    as FailureNotRecorded: the end-of-run rule announces the run with the end RecordFailure
    recorded (its error, not FailureNotRecorded)."""
    failing_run(account, "half", 3, missing={2})
    reads.fail = True
    with pytest.raises(ClientError):
        catch_path(account, "half")
    reads.fail = False
    event = {
        "detail-type": "Step Functions Execution Status Change",
        "detail": {
            "name": "half",
            "status": "FAILED",
            "executionArn": EXECUTION + "half",
            "input": json.dumps({"input": "s3://b/input/", "run_id": "half"}),
            "error": "FailureNotRecorded",
        },
    }
    failure = record_ended_execution(event, **account.failure_clients())
    assert failure is not None and failure.error == "ShardsMissing"
    run = account.table.get_run("half")
    assert (run["run_status"], run["error"]) == (FAILED, "ShardsMissing")
    assert run["failed_shards"] == ["part-000002.csv"] and RECORDING_FAILURE not in run
    _, (announced,) = account.announced()
    assert announced["detail"]["error"] == "ShardsMissing"
    assert announced["detail"]["output"] == example_plan(run_id="half").output
    assert record_ended_execution(event, **account.failure_clients()) is None, "once"


def test_recording_twice_releases_deletes_and_announces_once(account, monkeypatch):
    failing_run(account, "twice", 4, missing={2})
    released, deleted = [], []
    release, delete = InstanceLeases.release, account.sagemaker.delete_model

    def counted_release(self, instance_type, key):
        released.append(release(self, instance_type, key))
        return released[-1]

    def counted_delete(**kwargs):
        answer = delete(**kwargs)  # a model already gone raises
        deleted.append(kwargs["ModelName"])
        return answer

    monkeypatch.setattr(InstanceLeases, "release", counted_release)
    monkeypatch.setattr(account.sagemaker, "delete_model", counted_delete)
    first, second = catch_path(account, "twice"), catch_path(account, "twice")
    assert first == second
    assert released.count(True) == 1 and deleted == ["twice-model"]
    notifications, events = account.announced()
    assert len(notifications) == 1 and len(events) == 1
    assert account.table.get_run("twice")["failed_shards"] == ["part-000002.csv"]


def test_memory_does_not_grow_with_the_number_of_shards(account, bounds):
    """tracemalloc's peak while recording a run of 300 shards and of 3,000: the larger one
    holds no more (each reads at most READ items)."""
    peaks = {}
    for run_id, shards in (("warm", 30), ("small", 300), ("large", 3_000)):
        failing_run(account, run_id, shards, missing={shards - 1})
        tracemalloc.start()
        try:
            end_of_run_rule(account, run_id)
            peaks[run_id] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert account.table.get_run(run_id)["run_status"] == FAILED
    assert peaks["large"] - peaks["small"] < 256 * 1024, peaks
