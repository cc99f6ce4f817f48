"""The split tasks joined with the shard lists their splits answered, as Collect reads them
from the split Map's result files."""

import json

import pytest

from batchinfer.errors import InputError
from batchinfer.pipeline.storage.shard_indexes import SplitShards
from batchinfer.pipeline.storage.split_listings import SplitListings
from batchinfer.uris import S3Location
from tests.support.map_results import Child, map_run

from .conftest import BUCKET


def listings(account, tasks, answers):
    """SplitListings over ``tasks`` (Plan's item file) and the children ``answers``."""
    account.put("runs/r/inputs.jsonl", "".join(json.dumps(t) + "\n" for t in tasks).encode())
    manifest = map_run(account.s3, BUCKET, "SplitInputs", answers)
    return SplitListings(
        account.s3, S3Location(BUCKET, "runs/r/inputs.jsonl"), S3Location(BUCKET, manifest)
    )


def task(name: str) -> dict[str, str]:
    return {"input": f"s3://{BUCKET}/input/{name}", "output": f"s3://{BUCKET}/shards/r/"}


def test_tasks_come_in_their_order_with_what_their_split_listed_or_none(account):
    """Answers end in any order; a split job's child answers the item state (no list)."""
    a, b, c = task("a.csv"), task("b.csv.gz"), task("c.csv")
    answers = [
        Child(c, c | {"splitter": "job"}),
        Child(
            b, {"input": b["input"], "compression_type": "Gzip", "shard_list": [["b.csv.gz", 7]]}
        ),
        Child(
            a,
            {
                "input": a["input"],
                "compression_type": "None",
                "shard_list": [["a.p0", 3], ["a.p1", 4]],
            },
        ),
    ]
    with listings(account, [a, b, c], answers) as listed:
        assert list(listed) == [
            (a, SplitShards("None", (("a.p0", 3), ("a.p1", 4)))),
            (b, SplitShards("Gzip", (("b.csv.gz", 7),))),
            (c, None),
        ]


def test_a_shard_list_that_is_not_name_size_pairs_names_the_object_and_the_results(account):
    bad = task("bad.csv")
    answer = {"input": bad["input"], "compression_type": "None", "shard_list": [["x", "7"]]}
    with listings(account, [bad], [Child(bad, answer)]) as listed, pytest.raises(InputError) as err:
        list(listed)
    assert f"the split of {bad['input']} answered a shard list" in str(err.value)
    assert str(err.value).startswith(f"s3://{BUCKET}/runs/_map-results/")
    assert "/manifest.json: " in str(err.value)
