"""Happy paths through the synthesized state machine (Plan, Split, Collect, one job on 2
instances, Verify, Finalize): outputs equal the local engine's on the same input (R3, R4,
R12, R14, S1, S2), the status table, the run-finished event and ``_SUCCESS``."""

import json
from pathlib import Path

from batchinfer.engine.inputs import collect_inputs
from batchinfer.engine.transform_engine import run_transform
from batchinfer.pipeline.storage.notify import DETAIL_TYPE
from batchinfer.pipeline.storage.status_table import SUCCEEDED, StatusTable
from batchinfer.transform.settings import TransformSettings, validate_job_name
from batchinfer.uris import parse_s3_uri
from tests.support.models import WIDE
from tests.support.offline import OfflineStack, model_archive


def csv_rows(count: int, offset: int = 0) -> bytes:
    return b"".join(f"{i},{i + 1},{2 * i}\n".encode() for i in range(offset, offset + count))


def jsonl_rows(count: int) -> bytes:
    return b"".join(json.dumps({"id": i, "f": [i, i % 7]}).encode() + b"\n" for i in range(count))


def local_outputs(inputs: dict[str, bytes], settings: dict, model: Path, tmp: Path) -> dict:
    """What the local engine (``batchinfer run``'s engine) writes for the same inputs."""
    source = tmp / "local-in"
    for name, data in inputs.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    out = tmp / "local-out"
    report = run_transform(
        collect_inputs([source]),
        out,
        model_dir=model,
        settings=TransformSettings.from_request(settings),
    )
    assert all(o.succeeded for o in report.outcomes)
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.out")}


def assert_succeeded(stack: OfflineStack, run_id: str, records: int, shards: int) -> None:
    table = StatusTable.named(stack.table_name)
    run = table.get_run(run_id)
    assert run["run_status"] == SUCCEEDED
    assert run["records_in"] == run["records_out"] == records
    assert run["shards"] == run["shards_done"] == shards
    assert run["estimate"]["shards"] == shards, "Plan's estimate counts the shards Split makes"
    items = table.shards(run_id)
    assert len(items) == shards
    assert all(item["status"] == SUCCEEDED for item in items)
    assert sum(item["records_in"] for item in items) == records
    assert all(item["records_in"] == item["records_out"] for item in items)
    notifications, events = stack.announced()
    (event,) = events
    assert event["detail-type"] == DETAIL_TYPE
    assert event["detail"]["run_id"] == run_id
    assert event["detail"]["status"] == SUCCEEDED
    assert event["detail"]["records_out"] == records
    (message,) = notifications
    assert json.loads(message["Message"])["status"] == SUCCEEDED
    output = run["output"].removeprefix(f"s3://{stack.bucket}/")
    assert f"{output}_SUCCESS" in stack.keys(output)


def test_csv_sharded_on_two_instances_merged_equals_local_run(stack, row_sum_model_dir, tmp_path):
    """Two CSV objects split into 3 shards each, one transform job on 2 instances, merged
    back in order by the MergeOutputs Map, one MergeObject per input object: each
    ``<name>.out`` equals the local engine's (R5, R12-R14)."""
    inputs = {"a.csv": csv_rows(240), "nested/b.csv": csv_rows(90, offset=500)}
    for name, data in inputs.items():
        stack.put(f"input/daily/{name}", data)
    request = {
        "input": f"s3://{stack.bucket}/input/daily/",
        "run_id": "daily-csv",
        "shards": 3,
        "instance_count": 2,
        "merge": True,
    }
    execution = stack.run(request, "exec-csv")
    assert execution.status == "SUCCEEDED", execution.cause

    ((operation, job),) = stack.jobs.requests
    assert operation == "CreateTransformJob"
    validate_job_name(job["TransformJobName"])
    assert job["TransformResources"]["InstanceCount"] == 2
    manifest = json.loads(stack.get(job["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"]))
    assert len(manifest) == 1 + 6, "every shard of both objects in one ManifestFile (R4)"

    settings = {"content_type": "text/csv", "accept": "text/csv", "split_type": "Line"}
    settings |= {"assemble_with": "Line", "instance_count": 2}
    expected = local_outputs(inputs, settings, row_sum_model_dir, tmp_path)
    output = f"output/{request['run_id']}/"
    for name, data in expected.items():
        assert stack.get(f"s3://{stack.bucket}/{output}{name}") == data
    assert set(stack.keys(output)) == {
        f"{output}{n}" for n in [*expected, "_SUCCESS", "_manifest.json"]
    }
    assert_succeeded(stack, "daily-csv", records=330, shards=6)
    assert execution.output["result"]["records_out"] == 330
    merged = [event["input"] for event in stack.lambdas.events_of("merge_object")]
    assert sorted(merged) == [
        f"s3://{stack.bucket}/input/daily/{name}" for name in ("a.csv", "nested/b.csv")
    ], "one MergeObject per input object"


def test_jsonlines_with_processing_engine_equals_local_run(stack, row_sum_model_dir, tmp_path):
    """JSON Lines through a Processing job (ShardedByS3Key over 2 instances, P4, P6): the
    shard outputs, in shard order, are the local engine's output for the whole file."""
    data = jsonl_rows(120)
    stack.put("input/jl/scores.jsonl", data)
    settings = {
        "content_type": "application/jsonlines",
        "accept": "application/jsonlines",
        "split_type": "Line",
        "assemble_with": "Line",
        "instance_count": 2,
    }
    request = {"input": f"s3://{stack.bucket}/input/jl/", "engine": "processing", "shards": 4}
    execution = stack.run(request | settings, "exec-jsonl")
    assert execution.status == "SUCCEEDED", execution.cause

    ((operation, job),) = stack.jobs.requests
    assert operation == "CreateProcessingJob"
    assert job["ProcessingResources"]["ClusterConfig"]["InstanceCount"] == 2
    expected = local_outputs({"scores.jsonl": data}, settings, row_sum_model_dir, tmp_path)
    manifest = json.loads(stack.get(f"s3://{stack.bucket}/output/exec-jsonl/_manifest.json"))
    (entry,) = manifest["files"]
    parts = [name.strip() for name in entry["output"].split(",")]
    assert len(parts) == 4
    joined = b"".join(stack.get(f"s3://{stack.bucket}/output/exec-jsonl/{p}") for p in parts)
    assert joined == expected["scores.jsonl.out"]
    assert_succeeded(stack, "exec-jsonl", records=120, shards=4)


def test_the_data_bucket_is_versioned_and_encrypted_with_the_stack_key(stack):
    """As the template makes it: a split then copies a pinned object version (UploadPartCopy
    with VersionId) and every object is written under the stack's key."""
    stack.put("input/v/a.csv", csv_rows(200))
    execution = stack.run({"input": f"s3://{stack.bucket}/input/v/", "shards": 2}, "v")
    assert execution.status == "SUCCEEDED", execution.cause
    head = stack.s3.head_object(Bucket=stack.bucket, Key="input/v/a.csv")
    assert head["VersionId"] not in (None, "null")
    assert head["ServerSideEncryption"] == "aws:kms"
    for key in stack.keys("shards/v/") + stack.keys("output/v/"):
        assert (
            stack.s3.head_object(Bucket=stack.bucket, Key=key)["ServerSideEncryption"] == "aws:kms"
        )


def test_merge_copies_large_shard_outputs_and_gathers_small_ones(stack, tmp_path):
    """Shard outputs of about 1 KB, 12 MB, 3 MB, 12 MB and 1 KB merge into one object equal
    to the local engine's output: each small one goes up with the head of the large one after
    it, S3 copies the rest of each large one, and the 1 KB tail is copied as the last part;
    five parts in all, as the merged object's multipart ETag counts."""
    archive = model_archive(WIDE, tmp_path / "wide")
    served = parse_s3_uri(stack.model_data_url)
    stack.s3.upload_file(str(archive), served.bucket, served.key)
    widths = [10, 120_000, 30_000, 120_000, 10]
    data = b"".join(f"{row:06d},{width:08d}\n".encode() for width in widths for row in range(100))
    stack.put("input/wide/w.csv", data)
    request = {"input": f"s3://{stack.bucket}/input/wide/", "shards": 5, "merge": True}
    execution = stack.run(request, "exec-wide")
    assert execution.status == "SUCCEEDED", execution.cause

    settings = {"content_type": "text/csv", "accept": "text/csv", "split_type": "Line"}
    settings |= {"assemble_with": "Line"}
    expected = local_outputs({"w.csv": data}, settings, archive.parent / "model", tmp_path)
    merged = f"s3://{stack.bucket}/output/exec-wide/w.csv.out"
    assert stack.get(merged) == expected["w.csv.out"]
    head = stack.s3.head_object(Bucket=stack.bucket, Key="output/exec-wide/w.csv.out")
    assert head["ETag"].endswith('-5"')
    assert_succeeded(stack, "exec-wide", records=500, shards=5)
