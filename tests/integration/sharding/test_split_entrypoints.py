"""The ``batchinfer split`` command and the Step Functions Lambda handler
(lambda/split_object.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from batchinfer.errors import ValidationError
from batchinfer.pipeline.steps import split_object
from batchinfer.sharding import ShardIndex
from tests.support.lambdas import load_handler as load_lambda

CLI = Path(sys.executable).with_name("batchinfer")


def batchinfer(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "300"}  # keep rich from wrapping long paths
    return subprocess.run(
        [str(CLI), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def load_handler():
    return load_lambda("split_object").handler


def test_cli_splits_and_prints_the_shards(tmp_path, csv_lines):
    (tmp_path / "data.csv").write_bytes(b"a,b\n" + csv_lines(1000))
    result = batchinfer(
        "split", "data.csv", "--output", "out", "--shard-size", "8KiB", "--header", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    index = ShardIndex.load(str(tmp_path / "out" / "data.csv.index.json"))
    assert len(index.shards) > 1
    for shard in index.shards:
        assert shard.name in result.stdout
    assert "data.csv.manifest" in result.stdout
    assert b"".join(Path(u).read_bytes() for u in index.uris) == csv_lines(1000)


def test_cli_empty_input_exits_non_zero_with_a_message(tmp_path):
    (tmp_path / "empty.csv").write_bytes(b"")
    result = batchinfer("split", "empty.csv", "-o", "out", "--shards", "4", cwd=tmp_path)
    assert result.returncode == 3
    assert "empty.csv is empty" in result.stderr


def test_cli_needs_exactly_one_of_shards_and_shard_size(tmp_path):
    (tmp_path / "d.csv").write_bytes(b"1\n")
    result = batchinfer("split", "d.csv", "-o", "out", cwd=tmp_path)
    assert result.returncode == 2
    assert "--shards" in result.stderr and "--shard-size" in result.stderr
    result = batchinfer("split", "d.csv", "-o", "out", "--shard-size", "lots", cwd=tmp_path)
    assert result.returncode == 2
    assert "--shard-size: 'lots' is not a size" in result.stderr


def test_lambda_returns_the_index_location_and_a_short_shard_list(s3, bucket, csv_lines):
    """Collect reads the shard list from the split Map's results; the index stays the whole
    record (its spans, the header, the ETag)."""
    data = csv_lines(5000)
    source = bucket.put("in/data.csv", data)
    result = load_handler()(
        {"input": source, "output": f"s3://{bucket.name}/shards/", "shard_size": "20KiB"}, None
    )
    assert result["input"] == source
    assert result["index"] == f"s3://{bucket.name}/shards/data.csv.index.json"
    assert result["manifest"] == f"s3://{bucket.name}/shards/data.csv.manifest"
    index = ShardIndex.load(result["index"], s3_client=s3)
    assert result["shards"] == len(index.shards) > 1
    assert result["shard_list"] == [[shard.name, shard.size] for shard in index.shards]
    assert result["copied"] is True
    assert b"".join(bucket.get(uri) for uri in index.uris) == data


def test_lambda_lists_no_shards_above_the_listed_count(s3, bucket, csv_lines, monkeypatch):
    """Above LISTED_SHARDS the answer holds scalars only (a state holds at most 256 KB):
    Collect reads that object's index."""
    monkeypatch.setattr(split_object, "LISTED_SHARDS", 2)
    source = bucket.put("in/data.csv", csv_lines(5000))
    result = load_handler()(
        {"input": source, "output": f"s3://{bucket.name}/shards/", "shard_size": "20KiB"}, None
    )
    assert result["shards"] > 2 and result["shard_list"] is None
    assert all(not isinstance(value, list | dict) for value in result.values())
    assert len(json.dumps(result)) < 1024


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"input": "s3://b/k", "output": "s3://b/o/", "shards": 2, "sharts": 3}, "sharts"),
        ({"input": "/tmp/local.csv", "output": "s3://b/o/", "shards": 2}, "input must be an s3"),
        ({"input": "s3://b/k", "output": "s3://b/o/", "shards": "2"}, "shards must be an integer"),
        ({"input": "s3://b/k", "output": "s3://b/o/", "shard_size": "x"}, "shard_size: 'x'"),
        ({"input": "s3://b/k", "output": "s3://b/o/", "shards": 2, "header": "yes"}, "header"),
    ],
)
def test_lambda_rejects_bad_events_naming_the_key(event, message):
    with pytest.raises(ValidationError, match=message):
        load_handler()(event, None)
