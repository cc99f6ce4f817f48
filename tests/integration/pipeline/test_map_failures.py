"""The failed children of the Maps, read from their result files and named: CheckSplits
names the inputs whose split failed, Verify's reading names the shards whose check failed,
each with the child's error and cause, the first 10 and how many more; children left
pending are refused naming the manifest."""

import json

import pytest

from batchinfer.errors import InputError
from batchinfer.pipeline.contract.layout import MAP_RESULTS_FORMAT, MAP_RESULTS_PREFIX
from batchinfer.pipeline.contract.run_errors import MapItemFailed
from batchinfer.pipeline.steps.check_splits import check_splits
from batchinfer.pipeline.steps.verify import read_counts
from batchinfer.uris import S3Location
from tests.support.map_results import Child, write_map_results
from tests.support.run_state import BUCKET, example_plan

RUN = "arn:aws:states:eu-west-1:123456789012:mapRun:runs/M:5e6f7a8b"


def results(account, children: list[Child]) -> str:
    return write_map_results(
        account.s3, BUCKET, MAP_RESULTS_PREFIX, RUN, children, MAP_RESULTS_FORMAT
    )


def split_task(name: str) -> dict[str, str]:
    return {"input": f"s3://{BUCKET}/input/{name}", "output": f"s3://{BUCKET}/shards/r-1/"}


def test_check_splits_names_each_failed_input_with_its_error(account):
    children = [Child(split_task("a.csv"), {"shards": 1})] + [
        Child(split_task(f"bad-{n:02d}.csv"), None, "InputError", f"not gzip ({n})")
        for n in range(12)
    ]
    with pytest.raises(MapItemFailed) as failure:
        check_splits(example_plan(), splits=results(account, children), s3=account.s3)
    message = str(failure.value)
    assert f"s3://{BUCKET}/input/bad-00.csv (InputError): not gzip (0)" in message
    assert "bad-09.csv" in message and "bad-10.csv" not in message
    assert message.endswith("(and 2 more)") and "a.csv (" not in message


def test_check_splits_passes_when_every_split_succeeded(account):
    children = [Child(split_task("a.csv"), {"shards": 1})]
    check_splits(example_plan(), splits=results(account, children), s3=account.s3)


def test_a_failed_shard_check_is_named_before_any_count_is_read(account):
    given = {"shard": {"number": 3, "name": "r-1/c.csv"}, "job_output": "s3://o/"}
    cause = json.dumps({"errorMessage": "truncated gzip", "errorType": "InputError"})
    key = results(account, [Child(given, None, "InputError", cause)])
    with pytest.raises(MapItemFailed, match=r"shard checks failed: r-1/c.csv \(InputError\)"):
        next(read_counts(account.s3, S3Location(BUCKET, key)))


def test_children_left_pending_are_refused_naming_the_manifest(account):
    key = results(account, [])
    manifest = json.loads(account.get(f"s3://{BUCKET}/{key}"))
    manifest["ResultFiles"]["PENDING"] = [{"Key": f"{key[:-13]}PENDING_0.json", "Size": 10}]
    account.put(key, json.dumps(manifest).encode())
    with pytest.raises(InputError, match=r"manifest.json: children did not all run: .*PENDING_0"):
        check_splits(example_plan(), splits=key, s3=account.s3)
