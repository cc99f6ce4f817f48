"""The keys a run writes for one input object, measured in UTF-8 bytes against S3's 1,024
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html)."""

import pytest

from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.layout import RunLayout, check_key_bytes
from batchinfer.uris import S3Location

LAYOUT = RunLayout("data", "run-1")
OUTPUT = S3Location("data", "output/run-1/")


def test_each_key_a_run_writes_for_an_object_is_named_by_what_it_is():
    keys = LAYOUT.object_keys("day/a.csv", OUTPUT, merge=True, endpoint=True)
    assert keys == {
        "shard": "shards/run-1/day/a.part-99999.csv",
        "shard index": "shards/run-1/day/a.csv.index.json",
        "shard manifest": "shards/run-1/day/a.csv.manifest",
        "shard output": "runs/run-1/parts/day/a.part-99999.csv.out",
        "output": "output/run-1/day/a.csv.out",
        "scoring progress": f"runs/run-1/endpoint/{'j' * 63}/progress/day/a.part-99999.csv.json",
    }
    unmerged = LAYOUT.object_keys("a.csv", OUTPUT, merge=False, endpoint=False)
    assert unmerged["shard output"] == "output/run-1/a.part-99999.csv.out"
    assert "output" not in unmerged and "scoring progress" not in unmerged


def test_a_key_is_measured_in_utf8_bytes_not_characters():
    name = "日" * 335 + ".csv"  # 339 characters, 1,009 bytes
    keys = LAYOUT.object_keys(name, OUTPUT, merge=False, endpoint=False)
    assert all(len(key) < 1024 for key in keys.values())
    with pytest.raises(ValidationError, match=r"^input: s3://data/in/日+\.csv would be written"):
        check_key_bytes(keys, f"s3://data/in/{name}")
    check_key_bytes(
        LAYOUT.object_keys("日" * 300 + ".csv", OUTPUT, merge=False, endpoint=False), "x"
    )
