"""Collect: gather the shards the split Map made into the run's shard list, the SHARD items
and the first job's ManifestFile (spec R4: a key prefix or a ManifestFile selects the input
objects).

Every job input sits under the run's shard prefix (one ManifestFile prefix, and output
names relative to it, R12: each input object gives one output named after it): an object that
needed no split was copied there by its own split Map item (SplitObject, or CopyUnsplit after a
split job), so Collect only reads.

Memory stays bounded whatever the number of objects: the split tasks are read line by line,
their shard indexes :data:`PARALLEL_INDEXES` at a time (in order), the shard list and the
manifest are spooled to /tmp and SHARD items are written 25 at a time. Shard numbers follow
the order of the split tasks, so Collect run again writes the same objects and items.
"""

from functools import partial
from typing import Any

from batchinfer.errors import InputError
from batchinfer.pipeline.contract.state import Round, RunPlan, ShardEntry
from batchinfer.pipeline.storage.ordered import ordered_map
from batchinfer.pipeline.storage.s3io import SpooledJson, read_json_lines
from batchinfer.pipeline.storage.shard_indexes import input_name, shard_names, split_index
from batchinfer.pipeline.storage.status_table import PENDING, StatusTable
from batchinfer.sharding import ShardIndex

# Shard indexes read at once: one small GET each, about 0.2 s of latency, so 100,000
# objects take about 310 s (docs/scaling.md); the S3 client's pool holds as many
# connections (clients.S3_CONNECTIONS).
PARALLEL_INDEXES = 64


def collect(plan: RunPlan, *, execution: str, s3: Any, table: StatusTable) -> Round:
    """Write ``shards.jsonl``, SHARD items and ``round-1.manifest``; return round 1."""
    layout = plan.layout
    prefix = layout.shards.uri
    tasks = read_json_lines(s3, layout.inputs)
    gathered = ordered_map(partial(_gather, s3), tasks, workers=PARALLEL_INDEXES)
    with (
        SpooledJson("lines") as shards,
        SpooledJson("array") as manifest,
        table.shard_writer(plan.run_id) as put_shard,
    ):
        manifest.add({"prefix": prefix})
        for task, index in gathered:
            names = shard_names(index, task["output"], prefix)
            for shard, name in zip(index.shards, names, strict=True):
                put_shard(
                    shards.count,
                    {"status": PENDING, "name": name, "input": task["input"], "attempts": 0},
                )
                entry = ShardEntry(
                    number=shards.count,
                    name=name,
                    input=task["input"],
                    input_name=input_name(plan.input, task["input"]),
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


def _gather(s3: Any, task: dict[str, Any]) -> tuple[dict[str, Any], ShardIndex]:
    """The shard index of one split task."""
    return task, split_index(s3, task["input"], task["output"])
