"""Collect: gather the shards the split Map made into the run's shard list, the SHARD items
and the first job's ManifestFile (spec R4: a key prefix or a ManifestFile selects the input
objects).

Every job input sits under the run's shard prefix (one ManifestFile prefix, and output
names relative to it, R12: each input object gives one output named after it): an object that
needed no split was copied there by its own split Map item (SplitObject, or CopyUnsplit after a
split job), so Collect only reads.

What each object's split made comes from the split Map's result files, where SplitObject
answered its shard list (:mod:`batchinfer.pipeline.storage.split_listings`): a few large reads
whatever the number of objects. An object whose answer lists no shards (more than
``LISTED_SHARDS``, or split by a split job) has its shard index read instead,
:data:`PARALLEL_INDEXES` at a time, in order.

Memory stays bounded whatever the number of objects: the split tasks and their listings are
joined in /tmp and read line by line, the shard list and the manifest are spooled to /tmp
and SHARD items are written 25 at a time. Shard numbers follow the order of the split
tasks, so Collect run again writes the same objects and items.
"""

from functools import partial
from typing import Any

from batchinfer.errors import InputError
from batchinfer.pipeline.contract.state import Round, RunPlan, ShardEntry
from batchinfer.pipeline.storage.ordered import ordered_map
from batchinfer.pipeline.storage.s3io import SpooledJson
from batchinfer.pipeline.storage.shard_indexes import (
    SplitShards,
    input_name,
    shard_names,
    split_index,
)
from batchinfer.pipeline.storage.split_listings import SplitListings
from batchinfer.pipeline.storage.status_table import PENDING, StatusTable
from batchinfer.uris import S3Location

# Shard indexes read at once, for the objects whose split answered no shard list: one small
# GET each, about 0.2 s of latency, so 100,000 such objects would take about 310 s
# (docs/scaling.md); the S3 client's pool holds at least as many connections
# (clients.S3_CONNECTIONS).
PARALLEL_INDEXES = 64


def collect(
    plan: RunPlan, *, execution: str, splits: str | None, s3: Any, table: StatusTable
) -> Round:
    """Write ``shards.jsonl``, SHARD items and ``round-1.manifest``; return round 1.
    ``splits``: the key of the SplitInputs Map's result manifest (None, from an execution
    started under a definition that did not pass it: every shard index is read)."""
    layout = plan.layout
    prefix = layout.shards.uri
    results = None if splits is None else S3Location(layout.bucket, splits)
    with (
        SplitListings(s3, layout.inputs, results) as listed,
        SpooledJson("lines") as shards,
        SpooledJson("array") as manifest,
        table.shard_writer(plan.run_id) as put_shard,
    ):
        gathered = ordered_map(partial(_gather, s3), listed, workers=PARALLEL_INDEXES)
        manifest.add({"prefix": prefix})
        for task, split in gathered:
            names = shard_names((name for name, _ in split.shards), task["output"], prefix)
            for (_, size), name in zip(split.shards, names, strict=True):
                put_shard(
                    shards.count,
                    {"status": PENDING, "name": name, "input": task["input"], "attempts": 0},
                )
                entry = ShardEntry(
                    number=shards.count,
                    name=name,
                    input=task["input"],
                    input_name=input_name(plan.input, task["input"]),
                    size=size,
                    compression=split.compression,
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


def _gather(
    s3: Any, item: tuple[dict[str, Any], SplitShards | None]
) -> tuple[dict[str, Any], SplitShards]:
    """The shards of one split task: as its split listed them, or from its shard index."""
    task, listed = item
    if listed is not None:
        return task, listed
    return task, SplitShards.of(split_index(s3, task["input"], task["output"]))
