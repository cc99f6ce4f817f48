"""Records set aside (``bad_records`` quarantine) through the synthesized state machine: the
transform job's model server marks the records it refuses in its answers, as it does
locally; CountShard takes the marks out into each output's errors file and counts them;
Finalize numbers them in each input object, checks ``max_bad_records`` over the object's
shards, and the counts reach the RUN item, the manifest, the run-finished event and the SNS
message. One job round: no record set aside is scored again, none billed twice (R19: the
platform's rule, which quarantine departs from, stays the default)."""

import json

import pytest

from batchinfer.engine.local_job import LocalJob, run_job
from batchinfer.pipeline.storage.status_table import SUCCEEDED, StatusTable
from batchinfer.transform.settings import TransformSettings
from tests.integration.local.test_run_bad_records import BAD, QUARANTINE, rows
from tests.support.offline.lambdas import Dies, LambdaFault

from .test_faults import outcome, succeeded_once

ERRORS = "a.csv.out.errors.jsonl"


def local_run(data: bytes, model, tmp_path, **job: object) -> dict[str, bytes]:
    """What `batchinfer run` (the transform engine, shards merged) writes for ``data``."""
    source = tmp_path / "local-in" / "a.csv"
    source.parent.mkdir(parents=True)
    source.write_bytes(data)
    result = run_job(
        LocalJob(
            [source.parent],
            tmp_path / "local-out",
            model,
            TransformSettings.from_request(QUARANTINE | job.pop("settings", {})),  # type: ignore[operator]
            shards=3,
            merge=True,
        )
    )
    assert result.succeeded, result.failures
    return {name: (tmp_path / "local-out" / name).read_bytes() for name in result.files[0].outputs}


def request(stack, run_id: str, **more: object) -> dict:
    return {
        "input": f"s3://{stack.bucket}/input/{run_id}/",
        "run_id": run_id,
        "shards": 3,
        "merge": True,
        **QUARANTINE,
        **more,
    }


@pytest.mark.parametrize(
    ("engine", "operation"),
    [("transform", "CreateTransformJob"), ("processing", "CreateProcessingJob")],
)
def test_three_bad_records_among_ten_thousand_set_aside_in_one_round(
    stack, row_sum_model_dir, tmp_path, engine, operation
):
    """A transform job's server marks the three records and CountShard takes the marks
    out; a processing job's container sets them aside itself (the same handler, as
    `batchinfer run --engine processing`) and CountShard counts its errors files. Either
    way the same bytes as `batchinfer run`."""
    data = rows()
    stack.put("input/quarantine/a.csv", data)
    execution = stack.run(request(stack, "quarantine", engine=engine), "exec-quarantine")
    assert execution.status == "SUCCEEDED", execution.cause

    ((called, job),) = stack.jobs.requests  # one job, one round
    assert called == operation
    if engine == "transform":  # the model server's; a processing job's settings carry it
        assert job["Environment"]["BATCHINFER_MAX_BAD_RECORDS"] == str(2**31 - 1)
    output = f"s3://{stack.bucket}/output/quarantine/"
    written = {name: stack.get(output + name) for name in ("a.csv.out", ERRORS)}
    assert written == local_run(data, row_sum_model_dir, tmp_path)
    assert [json.loads(line)["record"] for line in written[ERRORS].splitlines()] == [
        n + 1 for n in BAD
    ]

    table = StatusTable.named(stack.table_name)
    run = table.get_run("quarantine")
    assert (run["records_in"], run["records_out"], run["records_quarantined"]) == (
        10_000,
        9_997,
        3,
    )
    assert sum(item["records_quarantined"] for item in table.shards("quarantine")) == 3
    manifest = json.loads(stack.get(output + "_manifest.json"))
    assert manifest["totals"]["records_quarantined"] == 3
    (entry,) = manifest["files"]
    assert entry["output"] == f"a.csv.out, {ERRORS}"
    assert entry["records_quarantined"] == 3
    notifications, events = stack.announced()
    (event,) = events
    assert event["detail"]["records_quarantined"] == 3
    assert event["detail"]["errors_files"] == [output + ERRORS]
    (message,) = notifications
    said = json.loads(message["Message"])
    assert (said["status"], said["records_quarantined"]) == (SUCCEEDED, 3)
    assert said["errors_files"] == [output + ERRORS]
    assert len(stack.jobs.started) == 1


def test_past_max_bad_records_in_one_request_the_job_fails_and_the_run_with_it(stack):
    """The three bad records share one request: the server refuses it whole, the job fails
    for its data, and the run fails naming the file after that one job."""
    stack.put("input/strict/a.csv", rows())
    execution = stack.run(request(stack, "strict", shards=1, max_bad_records=2), "exec-strict")
    assert execution.status == "FAILED"
    assert "a.csv" in (execution.cause or "")
    assert "more than max_bad_records 2" in (execution.cause or "")
    assert outcome(stack, "strict")["jobs"] == 1


def test_past_max_bad_records_over_an_objects_shards_the_run_fails_naming_it(stack):
    """One bad record in each of three shards: each shard is within the limit, the object
    is not; Finalize fails the run naming it, after one job, with no _SUCCESS."""
    stack.put("input/spread/a.csv", rows())
    execution = stack.run(request(stack, "spread", max_bad_records=2), "exec-spread")
    assert execution.status == "FAILED"
    assert f"s3://{stack.bucket}/input/spread/a.csv: 3 records set aside" in (execution.cause or "")
    assert outcome(stack, "spread") == {
        "status": "FAILED",
        "messages": 1,
        "events": 1,
        "success_marker": False,
        "jobs": 1,
    }


@pytest.mark.parametrize(
    "fault",
    [
        LambdaFault("count_shard", "after"),
        # Dead once the errors file is whole, before the output without marks replaced it.
        Dies("count_shard", "s3.CompleteMultipartUpload"),
        LambdaFault("finalize", "after"),
    ],
    ids=["count-again", "count-died-between-uploads", "finalize-again"],
)
def test_a_step_run_again_after_it_set_records_aside_counts_them_once(
    stack, row_sum_model_dir, tmp_path, fault
):
    data = rows()
    stack.put("input/again/a.csv", data)
    stack.lambdas.faults.append(fault)
    execution = stack.run(request(stack, "again"), "exec-again")
    assert execution.status == "SUCCEEDED", execution.cause
    assert outcome(stack, "again") == succeeded_once()
    output = f"s3://{stack.bucket}/output/again/"
    written = {name: stack.get(output + name) for name in ("a.csv.out", ERRORS)}
    assert written == local_run(data, row_sum_model_dir, tmp_path)
    run = StatusTable.named(stack.table_name).get_run("again")
    assert (run["records_out"], run["records_quarantined"]) == (9_997, 3)
    uploads = stack.s3.list_multipart_uploads(Bucket=stack.bucket)
    assert uploads.get("Uploads", []) == []


def test_shards_left_apart_keep_their_errors_files_numbered_in_each_shard(stack):
    """Without merge each shard's output stays apart (R12), and so does its errors file:
    its records numbered in the shard, the manifest naming both."""
    stack.put("input/apart/a.csv", rows())
    execution = stack.run(request(stack, "apart", merge=False), "exec-apart")
    assert execution.status == "SUCCEEDED", execution.cause
    output = f"s3://{stack.bucket}/output/apart/"
    manifest = json.loads(stack.get(output + "_manifest.json"))
    (entry,) = manifest["files"]
    names = entry["output"].split(", ")
    errors = [name for name in names if name.endswith(".errors.jsonl")]
    assert len(names) == 3 + 3 and len(errors) == 3  # one bad record in each shard
    named = [json.loads(stack.get(output + name)) for name in errors]
    assert [e["file"] + ".out.errors.jsonl" for e in named] == [
        name.rsplit("/", 1)[-1] for name in errors
    ]
    shard_rows = [
        stack.get(output + name).count(b"\n") for name in names if name.endswith(".csv.out")
    ]
    starts = [sum(shard_rows[:n]) + n for n in range(3)]  # records before each shard
    assert [start + e["record"] for start, e in zip(starts, named, strict=True)] == [
        n + 1 for n in BAD
    ]
    assert manifest["totals"]["records_quarantined"] == 3
