"""Runs of many input objects in moto, made fast: objects stored through moto's S3 backend
(no API call each), the state the split Map leaves for a run (Plan's item file, one shard
index per object and the Map's result files) without running the split, and a run's SHARD
items read back from moto's DynamoDB backend (no Query page each). The scale tests and
bench/pipeline/objects.py share them."""

import json
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.s3.models import s3_backends

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.steps.split_object import split_result
from batchinfer.pipeline.storage.status_table import (
    SHARD_PARTITIONS,
    SHARD_SK_PREFIX,
    shard_partition,
)
from batchinfer.sharding import ShardIndex
from batchinfer.sharding.index import Shard
from batchinfer.sharding.names import index_name, shard_name
from batchinfer.uris import parse_s3_uri
from tests.support.map_results import Child, map_run


def put_directly(bucket: str, key: str, data: bytes) -> None:
    """Store an object in moto's S3 (inside ``mock_aws``) without an API call."""
    s3_backends[DEFAULT_ACCOUNT_ID]["aws"].put_object(bucket, key, data)


def stored_shard_items(table: Any, run_id: str) -> list[dict[str, Any]]:
    """The SHARD items of run ``run_id`` in the status table ``table`` (a boto3 Table inside
    ``mock_aws``) as they are stored, in shard order: what ``StatusTable.shards`` answers,
    read from moto's backend (for 100,000 items, Query pages through moto take minutes).
    ``StatusTable.shards`` itself is tested on runs of a few shards."""
    region = table.meta.client.meta.region_name
    stored = dynamodb_backends[DEFAULT_ACCOUNT_ID][region].get_table(table.name)
    partitions = {shard_partition(run_id, partition) for partition in range(SHARD_PARTITIONS)}
    items = [
        item.to_regular_json()
        for hash_key, by_range in stored.items.items()
        if hash_key.value in partitions
        for range_key, item in by_range.items()
        if range_key.value.startswith(SHARD_SK_PREFIX)
    ]
    return sorted(items, key=lambda item: item["shard"])


def object_name(number: int) -> str:
    """The name of input object ``number`` below the input prefix: 1,000 to a folder."""
    return f"{number // 1000:03d}/part-{number:06d}.csv"


def put_inputs(bucket: str, prefix: str, count: int, data: bytes = b"1,2\n") -> None:
    """``count`` objects of ``data`` named :func:`object_name` below ``prefix``."""
    for number in range(count):
        put_directly(bucket, prefix + object_name(number), data)


def split_state(
    plan: RunPlan,
    count: int,
    s3: Any,
    *,
    unsplit: Collection[int] = (),
    two: Collection[int] = (),
    unlisted: Collection[int] = (),
) -> str:
    """What Plan and the split Map leave for ``count`` input objects of 4 bytes: the item
    file, one shard index per object, its one shard under the run's shard prefix, two for
    the objects in ``two``, or the input object itself (stored here) for those in
    ``unsplit``; and the Map's result files, the answers in reverse order (children end in
    any order), listing each object's shards but those in ``unlisted`` (as an object of more
    than LISTED_SHARDS). The key of the result manifest (``$.splits.manifest``)."""
    bucket = plan.layout.bucket
    shards = plan.layout.shards.uri
    lines, answers = [], []
    for number in range(count):
        folder, name = object_name(number).split("/")
        folder += "/"
        source = parse_s3_uri(plan.input).child(folder + name)
        task = {"input": source.uri, "output": shards + folder}
        lines.append(json.dumps(task))
        if number in unsplit:
            put_directly(bucket, source.key, b"1,2\n")
            parts = [Shard(name, source.uri, 0, 4, 4)]
        else:
            names = [shard_name(name, part) for part in range(2 if number in two else 1)]
            parts = [Shard(n, shards + folder + n, 0, 4, 4) for n in names]
        index = ShardIndex(source.uri, "etag", 4, "None", None, shards + folder, parts)
        key = plan.layout.shards.key + folder + index_name(name)
        put_directly(bucket, key, index.to_json().encode())
        answer = split_result(source.uri, replace(index, location=f"s3://{bucket}/{key}"))
        if number in unlisted:
            answer = replace(answer, shard_list=None)
        answers.append(Child(task, answer.to_state()))
    put_directly(bucket, plan.inputs_key, "".join(line + "\n" for line in lines).encode())
    return map_run(s3, bucket, "SplitInputs", reversed(answers))
