"""Collect: gather the shards the split Map made into the run's shard list, the SHARD items
and the first job's ManifestFile (spec R4: a key prefix or a ManifestFile selects the input
objects).

Every job input must sit under the run's shard prefix (one ManifestFile prefix, and output
names relative to it, R12: each input object gives one output named after it): an object that needed
no split (its index points at the input itself) is copied there server-side.

Memory stays bounded whatever the number of objects: the split tasks are read line by line,
their shard indexes :data:`PARALLEL_INDEXES` at a time (in order), the shard list and the
manifest are spooled to /tmp and SHARD items are written 25 at a time. Shard numbers follow
the order of the split tasks, so Collect run again writes the same objects and items.
"""

import posixpath
from functools import partial
from typing import Any

from batchinfer.errors import InputError
from batchinfer.pipeline.contract.state import Round, RunPlan, ShardEntry
from batchinfer.pipeline.storage.ordered import ordered_map
from batchinfer.pipeline.storage.s3io import SpooledJson, read_json_lines
from batchinfer.pipeline.storage.status_table import PENDING, StatusTable
from batchinfer.sharding import ShardIndex
from batchinfer.sharding.index import Shard
from batchinfer.sharding.names import index_name
from batchinfer.uris import S3Location, parse_s3_uri

# Shard indexes read (and unsplit objects copied) at once: one small GET each.
PARALLEL_INDEXES = 32
# The largest object a single CopyObject may copy; larger ones take a multipart copy.
MAX_COPY_OBJECT = 5 * 1024**3


def collect(plan: RunPlan, *, execution: str, s3: Any, table: StatusTable) -> Round:
    """Write ``shards.jsonl``, SHARD items and ``round-1.manifest``; return round 1."""
    layout = plan.layout
    prefix = layout.shards.uri
    base = _input_base(plan.input)
    tasks = read_json_lines(s3, layout.inputs)
    gathered = ordered_map(partial(_gather, s3, plan), tasks, workers=PARALLEL_INDEXES)
    with (
        SpooledJson("lines") as shards,
        SpooledJson("array") as manifest,
        table.shard_writer(plan.run_id) as put_shard,
    ):
        manifest.add({"prefix": prefix})
        for task, index in gathered:
            folder = task["output"][len(prefix) :]
            for shard in index.shards:
                name = folder + shard.name
                put_shard(
                    shards.count,
                    {"status": PENDING, "name": name, "input": task["input"], "attempts": 0},
                )
                entry = ShardEntry(
                    number=shards.count,
                    name=name,
                    input=task["input"],
                    input_name=task["input"][len(base) :],
                    size=shard.size,
                    compression=index.compression,
                )
                shards.add(entry.to_line())
                manifest.add(name)
        if not shards.count:
            raise InputError(f"input: {plan.input} produced no shards")
        shards.upload(s3, layout.shard_list)
        uri = manifest.upload(s3, layout.round_manifest(1))
    table.update_run(plan.run_id, execution, {"shards": shards.count, "shards_done": 0})
    return Round(
        number=1,
        manifest=uri,
        complete=False,
        shards=shards.count,
        missing=shards.count,
        shards_key=layout.round_shards(1).key,
    )


def _gather(s3: Any, plan: RunPlan, task: dict[str, Any]) -> tuple[dict[str, Any], ShardIndex]:
    """The shard index of one split task, its unsplit object copied under the shard prefix."""
    source = parse_s3_uri(task["input"])
    index_uri = parse_s3_uri(task["output"]).child(index_name(posixpath.basename(source.key)))
    try:
        index = ShardIndex.load(index_uri.uri, s3_client=s3)
    except InputError as exc:
        raise InputError(f"{task['input']}: the split left no shard index: {exc}") from None
    folder = task["output"][len(plan.layout.shards.uri) :]
    for shard in index.shards:
        if not shard.uri.startswith(plan.layout.shards.uri):
            _copy(s3, shard, S3Location(plan.layout.bucket, plan.layout.shards.key + folder))
    return task, index


def _copy(s3: Any, shard: Shard, folder: S3Location) -> None:
    """Copy ``shard`` server-side into ``folder`` under its own name."""
    origin = parse_s3_uri(shard.uri)
    target = folder.child(shard.name)
    if shard.size <= MAX_COPY_OBJECT:
        s3.copy_object(
            CopySource={"Bucket": origin.bucket, "Key": origin.key},
            Bucket=target.bucket,
            Key=target.key,
        )
    else:
        s3.copy({"Bucket": origin.bucket, "Key": origin.key}, target.bucket, target.key)


def _input_base(input_uri: str) -> str:
    """The part of ``input_uri`` that output names are relative to (up to the last ``/``)."""
    return input_uri[: input_uri.rfind("/") + 1]
