"""A run through the real Lambda handlers over moto: Plan, Split (lambda/split_object.py), Collect,
PrepareJob, a transform job that leaves one shard without output, Verify resubmitting only
that shard (spec R4), the second job, Verify, the ordered merge (one MergeObject per input
object), Finalize."""

import json
from typing import Any

import pytest

from batchinfer.errors import InputError
from batchinfer.pipeline.contract.state import CAUSE_LIMIT, JobOutcome
from batchinfer.pipeline.jobs.job_requests import TRANSFORM_FIELDS
from batchinfer.pipeline.steps.collect import PARALLEL_INDEXES
from batchinfer.pipeline.steps.plan import FOOTER_READS
from batchinfer.pipeline.storage.merge import WORKERS
from batchinfer.pipeline.storage.status_table import FAILED, MISSING, RUNNING, SUCCEEDED
from batchinfer.sharding.s3 import S3Source
from batchinfer.transform.settings import validate_job_name
from tests.support.lambdas import load_handler
from tests.support.map_results import Child, count_shards, map_run, split_inputs
from tests.support.offline.moto_fixes import copy_source_if_match

from .conftest import BUCKET

EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:exec-1"


def rows(count: int, offset: int = 0) -> bytes:
    return b"".join(f"{i},{i + 1},{2 * i}\n".encode() for i in range(offset, offset + count))


def row_sums(data: bytes) -> bytes:
    """Model M of the spec: one sum per CSV row (AssembleWith Line adds the newlines)."""
    return b"".join(
        f"{sum(int(x) for x in line.split(b','))}\n".encode() for line in data.splitlines()
    )


LOST_INSTANCE = "InternalServerError: We encountered an internal error. Please try again."


def run_job(
    account, job: dict[str, Any], skip: set[str] = frozenset(), reason: str = LOST_INSTANCE
) -> dict[str, Any]:
    """Do what the transform job of ``job`` does, leaving out the shards in ``skip``; the
    job then fails with ``reason`` (an infrastructure failure unless told otherwise)."""
    request = job["request"]
    manifest = json.loads(
        account.get(request["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"])
    )
    prefix, names = manifest[0]["prefix"], manifest[1:]
    output = request["TransformOutput"]["S3OutputPath"]
    for name in names:
        if name in skip:
            continue
        data = account.get(prefix + name)
        account.put(output.removeprefix(f"s3://{BUCKET}/") + name + ".out", row_sums(data))
    if skip:
        cause = {
            "TransformJobName": job["name"],
            "TransformJobStatus": "Failed",
            "FailureReason": reason,
        }
        return {"Error": "States.TaskFailed", "Cause": json.dumps(cause)}
    return {"name": job["name"], "status": "Completed"}


def collected(
    account, handlers, run_id: str, key: str, count: int, shards: int | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Plan, split and collect a run of ``count`` rows at ``key``: its plan and round 1."""
    account.put(key, rows(count))
    request = {"input": f"s3://{BUCKET}/{key}", "run_id": run_id}
    if shards:
        request["shards"] = shards
    start = {"execution": EXECUTION, "execution_name": run_id, "started_at": "t"}
    plan = handlers["plan"].handler({"request": request, **start}, None)
    return plan, handlers["collect"].handler(collect_event(account, handlers, plan), None)


def collect_event(account, handlers, plan: dict[str, Any]) -> dict[str, Any]:
    """Collect's event after the SplitInputs Map split each of ``plan``'s input objects."""
    splits = split_inputs(account.s3, BUCKET, handlers["split_object"].handler, plan)
    return {"plan": plan, "execution": EXECUTION, "splits": splits}


def merge_events(account, plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The MergeOutputs Map's items: one per line of Plan's split tasks, with the plan."""
    tasks = account.json_lines(f"s3://{BUCKET}/{plan['inputs_key']}")
    return [{"input": task["input"], "folder": task["output"], "plan": plan} for task in tasks]


def verify_event(account, handlers, plan, round_, outcome) -> dict[str, Any]:
    """Verify's event after the CountShards Map checked each shard of ``round_``."""
    counts = count_shards(account.s3, BUCKET, handlers["count_shard"].handler, plan, round_)
    return {
        "plan": plan,
        "round": round_,
        "job": outcome,
        "counts": counts["manifest"],
        "execution": EXECUTION,
    }


@pytest.fixture
def handlers(account, monkeypatch):
    for key, value in account.env.to_variables().items():
        monkeypatch.setenv(key, value)
    loaded = {
        name: load_handler(name)
        for name in (
            "plan",
            "split_object",
            "collect",
            "prepare_job",
            "count_shard",
            "verify",
            "merge_object",
            "finalize",
            "record_failure",
        )
    }
    from batchinfer.pipeline.storage.clients import services

    services.cache_clear()
    yield loaded
    services.cache_clear()


def test_run_with_one_failed_shard_resubmits_only_it_then_merges(account, handlers):
    a = rows(300)
    b = rows(7, offset=1000)
    account.put("input/batch/a.csv", a)
    account.put("input/batch/sub/b.csv", b)
    request = {"input": f"s3://{BUCKET}/input/batch/", "shards": 3, "merge": True}
    plan = handlers["plan"].handler(
        {
            "request": request,
            "execution": EXECUTION,
            "execution_name": "exec-1",
            "started_at": "2025-01-01T00:00:00Z",
        },
        None,
    )
    assert plan["run_id"] == "exec-1"
    assert account.table.get_run("exec-1")["run_status"] == RUNNING
    items = account.json_lines(f"s3://{BUCKET}/{plan['inputs_key']}")
    assert [i["input"].rsplit("/", 2)[-2:] for i in items] == [["batch", "a.csv"], ["sub", "b.csv"]]

    splits = [Child(item, handlers["split_object"].handler(item, None)) for item in items]
    assert [split.output["shards"] for split in splits] == [3, 3]
    listed = splits[0].output["shard_list"]  # read by Collect from the Map's results
    assert [name for name, _ in listed] == [f"a.part-0000{n}.csv" for n in range(3)]
    assert sum(size for _, size in listed) == len(a)
    manifest_key = map_run(account.s3, BUCKET, "SplitInputs", splits)
    collect_1 = {"plan": plan, "execution": EXECUTION, "splits": manifest_key}
    round_1 = handlers["collect"].handler(collect_1, None)
    manifest = json.loads(account.get(round_1["manifest"]))
    assert manifest[0] == {"prefix": f"s3://{BUCKET}/shards/exec-1/"}
    assert manifest[1:] == [
        "a.part-00000.csv",
        "a.part-00001.csv",
        "a.part-00002.csv",
        "sub/b.part-00000.csv",
        "sub/b.part-00001.csv",
        "sub/b.part-00002.csv",
    ]

    job_1 = handlers["prepare_job"].handler({"plan": plan, "round": round_1}, None)
    assert set(TRANSFORM_FIELDS) <= set(job_1["request"]), "the task copies these fields"
    assert job_1["data_processing"] is False
    validate_job_name(job_1["name"])
    outcome = run_job(account, job_1, skip={"a.part-00001.csv"})

    round_2 = handlers["verify"].handler(
        verify_event(account, handlers, plan, round_1, outcome), None
    )
    assert round_2["complete"] is False and round_2["number"] == 2
    assert json.loads(account.get(round_2["manifest"])) == [manifest[0], "a.part-00001.csv"]
    shard_items = account.table.shards("exec-1")
    assert [i["status"] for i in shard_items].count(MISSING) == 1
    assert {i["job_name"] for i in shard_items} == {job_1["name"]}

    job_2 = handlers["prepare_job"].handler({"plan": plan, "round": round_2}, None)
    assert job_2["name"] != job_1["name"] and "-r2-" in job_2["name"]
    outcome = run_job(account, job_2)
    done = handlers["verify"].handler(verify_event(account, handlers, plan, round_2, outcome), None)
    assert done["complete"] is True

    output = f"s3://{BUCKET}/output/exec-1/"
    merged = [handlers["merge_object"].handler(e, None) for e in merge_events(account, plan)]
    assert merged == [
        {"output": output + "a.csv.out", "shards": 3},
        {"output": output + "sub/b.csv.out", "shards": 3},
    ]
    result = handlers["finalize"].handler({"plan": plan, "execution": EXECUTION}, None)
    assert result == {
        "run_id": "exec-1",
        "status": SUCCEEDED,
        "output": output,
        "records_in": 307,
        "records_out": 307,
        "shards": 6,
        "execution": EXECUTION,
    }
    assert account.get(output + "a.csv.out") == row_sums(a)
    assert account.get(output + "sub/b.csv.out") == row_sums(b)
    assert account.get(output + "_SUCCESS") == b""
    result_manifest = json.loads(account.get(output + "_manifest.json"))
    assert [f["output"] for f in result_manifest["files"]] == ["a.csv.out", "sub/b.csv.out"]
    assert result_manifest["totals"]["records_in"] == 307
    assert [f["records_not_counted"] for f in result_manifest["files"]] == [None, None]  # R17
    run = account.table.get_run("exec-1")
    assert run["run_status"] == SUCCEEDED and run["records_out"] == 307
    notifications, events = account.announced()
    assert json.loads(notifications[0]["Message"])["status"] == SUCCEEDED
    (event,) = events
    assert event["detail-type"] == "Batch Inference Run Finished"
    assert event["detail"] | {} == {
        "run_id": "exec-1",
        "status": SUCCEEDED,
        "output": output,
        "records_in": 307,
        "records_out": 307,
        "shards": 6,
        "execution": EXECUTION,
    }


def test_without_merge_outputs_stay_per_shard_and_small_objects_are_copied_by_their_split(
    account, handlers
):
    """An object that needed no split is copied under the shard prefix by its own split Map
    item (R4: one ManifestFile prefix), not by Collect."""
    account.put("input/one.csv", rows(4))
    plan = handlers["plan"].handler(
        {
            "request": {"input": f"s3://{BUCKET}/input/one.csv", "run_id": "r-1"},
            "execution": EXECUTION,
            "execution_name": "x",
            "started_at": "t",
        },
        None,
    )
    (item,) = account.json_lines(f"s3://{BUCKET}/{plan['inputs_key']}")
    split = handlers["split_object"].handler(item, None)
    assert split["copied"] is False
    assert "shards/r-1/one.csv" in account.keys("shards/r-1/"), "copied by its split"
    splits = map_run(account.s3, BUCKET, "SplitInputs", [Child(item, split)])
    round_1 = handlers["collect"].handler(
        {"plan": plan, "execution": EXECUTION, "splits": splits}, None
    )
    job = handlers["prepare_job"].handler({"plan": plan, "round": round_1}, None)
    handlers["verify"].handler(
        verify_event(account, handlers, plan, round_1, run_job(account, job)),
        None,
    )
    handlers["finalize"].handler({"plan": plan, "execution": EXECUTION}, None)
    assert account.get(f"s3://{BUCKET}/output/r-1/one.csv.out") == row_sums(rows(4))


def test_an_unsplit_object_replaced_after_its_split_measured_it_fails_naming_it(
    account, handlers, monkeypatch
):
    """A newer version written between the split's measure and the copy of an object that
    needed no split: the copy (CopySourceIfMatch with the ETag the split recorded) fails,
    naming the object, and neither version is copied under the shard prefix."""
    account.put("input/moved/one.csv", rows(4))
    start = {"execution": EXECUTION, "execution_name": "moved", "started_at": "t"}
    request = {"input": f"s3://{BUCKET}/input/moved/", "run_id": "moved"}
    plan = handlers["plan"].handler({"request": request, **start}, None)
    (item,) = account.json_lines(f"s3://{BUCKET}/{plan['inputs_key']}")
    measured = S3Source.check_unchanged

    def replaced_after_measure(source: S3Source) -> None:
        measured(source)
        account.put("input/moved/one.csv", rows(5))

    monkeypatch.setattr(S3Source, "check_unchanged", replaced_after_measure)
    with copy_source_if_match(), pytest.raises(InputError) as failed:
        handlers["split_object"].handler(item, None)
    assert f"s3://{BUCKET}/input/moved/one.csv changed" in str(failed.value)
    assert "shards/moved/one.csv" not in account.keys("shards/moved/")


def test_the_s3_client_has_a_connection_for_each_thread_that_shares_it(handlers):
    """Plan reads FOOTER_READS Parquet footers at once, Collect PARALLEL_INDEXES shard
    indexes, and a merge or a split sends 8 parts side by side, each through the Lambda's one
    S3 client: its pool holds a connection for each thread (boto3's default of 10 would keep
    the others waiting)."""
    from batchinfer.pipeline.storage.clients import services

    threads = max(FOOTER_READS, PARALLEL_INDEXES, WORKERS, S3Source.copy_workers)
    assert services().s3.meta.config.max_pool_connections >= threads


def test_last_round_without_output_fails_naming_shard_and_job(account, handlers):
    plan, round_ = collected(account, handlers, "r-2", "input/x.csv", 50, 2)
    for _ in range(int(account.env.max_rounds)):
        job = handlers["prepare_job"].handler({"plan": plan, "round": round_}, None)
        outcome = run_job(account, job, skip={"x.part-00001.csv"})
        event = verify_event(account, handlers, plan, round_, outcome)
        if round_["number"] < int(account.env.max_rounds):
            round_ = handlers["verify"].handler(event, None)
            continue
        with pytest.raises(Exception, match="1 of 2 shards have no valid output after 2") as err:
            handlers["verify"].handler(event, None)
        assert type(err.value).__name__ == "ShardsMissing"
        assert "x.part-00001.csv: no output" in str(err.value)
        assert f"job {job['name']} failed (States.TaskFailed): InternalServerError" in str(
            err.value
        )

    state = {
        "plan": plan,
        "round": round_,
        "job": outcome,
        "error": {
            "Error": "ShardsMissing",
            "Cause": json.dumps({"errorType": "ShardsMissing", "errorMessage": str(err.value)}),
        },
    }
    failure = handlers["record_failure"].handler(
        {"state": state, "execution": EXECUTION, "execution_name": "x"}, None
    )
    assert failure["error"] == "ShardsMissing"
    assert failure["cause"].startswith("run r-2: 1 of 2 shards")
    run = account.table.get_run("r-2")
    assert run["run_status"] == FAILED
    assert run["failed_shards"] == ["x.part-00001.csv"]
    assert run["failed_job"] == JobOutcome.from_state(outcome).name
    notifications, events = account.announced()
    assert notifications[0]["MessageAttributes"]["status"]["Value"] == FAILED
    assert events[0]["detail"]["failed_shards"] == ["x.part-00001.csv"]


def test_a_job_failed_for_its_data_fails_the_run_without_a_new_round(account, handlers):
    """ClientError: the container refused records. Verify names the shard without output
    and the reason, and asks for no resubmission (a second job would fail the same way)."""
    plan, round_ = collected(account, handlers, "r-3", "input/y.csv", 50, 2)
    job = handlers["prepare_job"].handler({"plan": plan, "round": round_}, None)
    reason = "ClientError: y.part-00001.csv: record 3: HTTP 400: not a number"
    outcome = run_job(account, job, skip={"y.part-00001.csv"}, reason=reason)
    event = verify_event(account, handlers, plan, round_, outcome)
    with pytest.raises(Exception, match="no new round") as err:
        handlers["verify"].handler(event, None)
    assert type(err.value).__name__ == "DataFailure"
    assert "y.part-00001.csv: no output" in str(err.value) and "record 3" in str(err.value)
    assert account.keys("runs/r-3/round-2") == [], "no resubmission manifest"
    shards = {item["name"]: item["status"] for item in account.table.shards("r-3")}
    assert shards == {"y.part-00000.csv": SUCCEEDED, "y.part-00001.csv": MISSING}


def test_an_output_short_of_records_is_missing_named_by_its_counts(account, handlers):
    """R6: a shard whose output has fewer Line records than its input has no valid output;
    Verify names the shard and both counts, and resubmits it alone."""
    plan, round_ = collected(account, handlers, "r-5", "input/w.csv", 30, 2)
    job = handlers["prepare_job"].handler({"plan": plan, "round": round_}, None)
    outcome = run_job(account, job)
    short = "output/r-5/w.part-00001.csv.out"
    lines = account.get(f"s3://{BUCKET}/{short}").splitlines(keepends=True)
    account.put(short, b"".join(lines[:-1]))
    round_2 = handlers["verify"].handler(
        verify_event(account, handlers, plan, round_, outcome), None
    )
    assert round_2["number"] == 2 and round_2["missing"] == 1 and round_2["shards"] == 2
    assert account.json_lines(f"s3://{BUCKET}/{round_2['shards_key']}") == [
        s for s in account.json_lines(f"s3://{BUCKET}/runs/r-5/shards.jsonl") if s["number"] == 1
    ]
    reasons = {item["name"]: item.get("reason") for item in account.table.shards("r-5")}
    assert reasons == {
        "w.part-00000.csv": None,
        "w.part-00001.csv": f"output has {len(lines) - 1} records, input {len(lines)}",
    }


def test_outputs_that_cannot_be_counted_need_only_exist(account, handlers):
    """R17: with Accept application/json an answer is not one line per record, so a shard's
    output is valid when it exists, whatever its lines, and no counts are recorded."""
    account.put("input/v.csv", rows(12))
    request = {"input": f"s3://{BUCKET}/input/v.csv", "run_id": "r-6", "accept": "application/json"}
    start = {"execution": EXECUTION, "execution_name": "r-6", "started_at": "t"}
    plan = handlers["plan"].handler({"request": request, **start}, None)
    round_ = handlers["collect"].handler(collect_event(account, handlers, plan), None)
    job = handlers["prepare_job"].handler({"plan": plan, "round": round_}, None)
    outcome = run_job(account, job)
    account.put("output/r-6/v.csv.out", b'[{"sums": "one document"}]')
    event = verify_event(account, handlers, plan, round_, outcome)
    assert handlers["verify"].handler(event, None)["complete"] is True
    (shard,) = account.table.shards("r-6")
    assert shard["status"] == SUCCEEDED and "records_in" not in shard


def test_a_job_stopped_from_outside_stops_the_run(account, handlers):
    plan, round_ = collected(account, handlers, "r-4", "input/z.csv", 10, None)
    job = handlers["prepare_job"].handler({"plan": plan, "round": round_}, None)
    cause = {"TransformJobName": job["name"], "TransformJobStatus": "Stopped"}
    outcome = {"Error": "States.TaskFailed", "Cause": json.dumps(cause)}
    event = verify_event(account, handlers, plan, round_, outcome)
    with pytest.raises(Exception, match="stopped from outside") as err:
        handlers["verify"].handler(event, None)
    assert type(err.value).__name__ == "JobStopped"
    assert account.keys("runs/r-4/round-2") == []


@pytest.mark.parametrize("unit", [1, 1000], ids=["epoch-seconds", "epoch-milliseconds"])
def test_a_processing_job_stopped_at_its_runtime_limit_gets_a_new_round(account, handlers, unit):
    """A processing job that ended Stopped after running its MaxRuntimeInSeconds (from
    CreationTime to ProcessingEndTime, epoch seconds or milliseconds) was stopped by
    SageMaker: a job failure, its shards get a new round. Stopped a second short of its
    limit, it was stopped from outside and the run stops."""
    plan, round_ = collected(account, handlers, f"r-9-{unit}", "input/z.csv", 10, None)
    job = handlers["prepare_job"].handler({"plan": plan, "round": round_}, None)
    created = 1_790_000_000 * unit

    def stopped(ran: int) -> dict[str, Any]:
        cause = {
            "ProcessingJobName": job["name"],
            "ProcessingJobStatus": "Stopped",
            "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
            "CreationTime": created,
            "ProcessingEndTime": created + ran * unit,
        }
        return {"Error": "States.TaskFailed", "Cause": json.dumps(cause)}

    assert "reached its runtime limit" in JobOutcome.from_state(stopped(3600)).describe()
    event = verify_event(account, handlers, plan, round_, stopped(3600))
    round_2 = handlers["verify"].handler(event, None)
    assert (round_2["number"], round_2["missing"], round_2["wait_seconds"]) == (2, 1, 0)
    event = verify_event(account, handlers, plan, round_2, stopped(3599))
    with pytest.raises(Exception, match="stopped from outside") as err:
        handlers["verify"].handler(event, None)
    assert type(err.value).__name__ == "JobStopped"


def test_a_capacity_failure_waits_before_the_next_round(account, handlers):
    """A job Failed with a CapacityError: the next round carries the wait before it,
    capacity_wait_seconds after round 1 (the e2e run sees it doubled after round 2); a job
    that lost its instance gives the next round none."""
    for run_id, reason, wait in (
        ("r-10", "CapacityError: Unable to provision requested ML compute capacity.", True),
        ("r-11", LOST_INSTANCE, False),
    ):
        plan, round_ = collected(account, handlers, run_id, "input/z.csv", 10, None)
        job = handlers["prepare_job"].handler({"plan": plan, "round": round_}, None)
        outcome = run_job(account, job, skip={"z.csv"}, reason=reason)
        event = verify_event(account, handlers, plan, round_, outcome)
        round_2 = handlers["verify"].handler(event, None)
        assert round_2["number"] == 2
        assert round_2["wait_seconds"] == (account.env.capacity_wait_seconds if wait else 0)
    assert account.env.capacity_wait_seconds > 0


def _cut(outcome: dict[str, Any]) -> dict[str, Any]:
    """``outcome`` as AWS records it when the job's container environment is large: the
    Describe*Job response in its Cause cut at 32,768 characters (TaskFailedEventDetails)."""
    described = json.loads(outcome["Cause"])
    described["Environment"] = {f"SETTING_{n}": "x" * 10_240 for n in range(16)}  # R1 limits
    cause = json.dumps(described)
    assert len(cause) > CAUSE_LIMIT
    return {**outcome, "Cause": cause[:CAUSE_LIMIT]}


def test_a_data_failure_and_a_stop_are_told_from_a_cause_cut_at_its_limit(account, handlers):
    """A task failure's Cause is cut at 32,768 characters: the job's name, status and
    FailureReason before the cut still tell a data failure (no new round) and a stop."""
    plan, round_ = collected(account, handlers, "r-7", "input/y.csv", 50, 2)
    job = handlers["prepare_job"].handler({"plan": plan, "round": round_}, None)
    reason = "ClientError: y.part-00001.csv: record 3: HTTP 400: not a number"
    outcome = _cut(run_job(account, job, skip={"y.part-00001.csv"}, reason=reason))
    assert JobOutcome.from_state(outcome).name == job["name"]
    event = verify_event(account, handlers, plan, round_, outcome)
    with pytest.raises(Exception, match="no new round") as err:
        handlers["verify"].handler(event, None)
    assert type(err.value).__name__ == "DataFailure"

    plan, round_ = collected(account, handlers, "r-8", "input/z.csv", 10, None)
    job = handlers["prepare_job"].handler({"plan": plan, "round": round_}, None)
    cause = {"TransformJobName": job["name"], "TransformJobStatus": "Stopped"}
    outcome = _cut({"Error": "States.TaskFailed", "Cause": json.dumps(cause)})
    event = verify_event(account, handlers, plan, round_, outcome)
    with pytest.raises(Exception, match="stopped from outside") as err:
        handlers["verify"].handler(event, None)
    assert type(err.value).__name__ == "JobStopped"


def test_every_step_run_again_after_it_ran_gives_the_same_result_once(account, handlers):
    """Step Functions retries a Lambda task whose answer was lost (Lambda.ServiceException
    after the handler ran): each step, run again with the same event, answers the same, and
    its side effects happen once: one RUN item, the same objects, one event and one message."""

    def twice(step: str, event: dict[str, Any]) -> dict[str, Any]:
        first = handlers[step].handler(event, None)
        keys, items = account.keys(""), account.table.shards("again")
        second = handlers[step].handler(event, None)
        if step != "prepare_job":  # a new job name per try: PrepareJob has no side effect
            assert second == first, step
        assert account.keys("") == keys, f"{step} wrote new objects when run again"
        assert len(account.table.shards("again")) == len(items), step
        return first

    data = rows(40)
    account.put("input/again/d.csv", data)
    request = {"input": f"s3://{BUCKET}/input/again/", "shards": 2, "merge": True}
    start = {"execution": EXECUTION, "execution_name": "again", "started_at": "t"}
    plan = twice("plan", {"request": request, **start})
    (item,) = account.json_lines(f"s3://{BUCKET}/{plan['inputs_key']}")
    split = twice("split_object", item)
    splits = map_run(account.s3, BUCKET, "SplitInputs", [Child(item, split)])
    round_ = twice("collect", {"plan": plan, "execution": EXECUTION, "splits": splits})
    job = twice("prepare_job", {"plan": plan, "round": round_})
    outcome = run_job(account, job)
    (shard, *_) = account.json_lines(f"s3://{BUCKET}/{round_['shards_key']}")
    check = {
        "shard": shard,
        "job_output": plan["job_output"],
        "shards_prefix": plan["shards_prefix"],
        "settings": plan["settings"],
    }
    lines = account.get(plan["shards_prefix"] + shard["name"]).count(b"\n")
    assert twice("count_shard", check)["records"] == {"records_in": lines, "records_out": lines}
    done = twice("verify", verify_event(account, handlers, plan, round_, outcome))
    assert done["complete"] is True
    (merge,) = merge_events(account, plan)
    assert twice("merge_object", merge)["shards"] == 2
    result = twice("finalize", {"plan": plan, "execution": EXECUTION})
    assert result["status"] == SUCCEEDED and result["records_out"] == 40
    assert account.get(f"s3://{BUCKET}/output/again/d.csv.out") == row_sums(data)
    notifications, events = account.announced()
    assert len(notifications) == 1 and len(events) == 1, "announced once"
