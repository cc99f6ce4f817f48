"""Collect: gather the shards the split Map made into the run's shard list, the SHARD items
and the first job's ManifestFile (spec R4).

Every job input must sit under the run's shard prefix (one ManifestFile prefix, and output
names relative to it, R12): an object that needed no split (its index points at the input
itself) is copied there server-side.
"""

import posixpath
from typing import Any

from batchinfer.errors import InputError
from batchinfer.pipeline.s3io import read_json_lines, write_json
from batchinfer.pipeline.state import Round, RunPlan
from batchinfer.pipeline.status_table import PENDING, StatusTable
from batchinfer.sharding import ShardIndex
from batchinfer.sharding.names import index_name
from batchinfer.uris import S3Location, parse_s3_uri


def collect(plan: RunPlan, *, execution: str, s3: Any, table: StatusTable) -> Round:
    """Write ``shards.json``, SHARD items and ``round-1.manifest``; return round 1."""
    layout = plan.layout
    bucket = layout.bucket
    items = read_json_lines(s3, layout.inputs)
    prefix = layout.shards.uri
    shards: list[dict[str, Any]] = []
    for item in items:
        source = parse_s3_uri(item["input"])
        input_name = item["input"][len(_input_base(plan.input)) :]
        folder = item["output"][len(prefix) :]
        index_uri = parse_s3_uri(item["output"]).child(index_name(posixpath.basename(source.key)))
        try:
            index = ShardIndex.load(index_uri.uri, s3_client=s3)
        except InputError as exc:
            raise InputError(f"{item['input']}: the split left no shard index: {exc}") from None
        for shard in index.shards:
            name = folder + shard.name
            if not shard.uri.startswith(prefix):
                target = S3Location(bucket, layout.shards.key + name)
                origin = parse_s3_uri(shard.uri)
                s3.copy({"Bucket": origin.bucket, "Key": origin.key}, target.bucket, target.key)
            shards.append(
                {
                    "number": len(shards),
                    "name": name,
                    "input": item["input"],
                    "input_name": input_name,
                    "size": shard.size,
                    "compression": index.compression,
                }
            )
    if not shards:
        raise InputError(f"input: {plan.input} produced no shards")
    write_json(s3, layout.shard_list, shards)
    for shard in shards:
        table.put_shard(
            plan.run_id,
            shard["number"],
            {"status": PENDING, "name": shard["name"], "input": shard["input"], "attempts": 0},
        )
    table.update_run(plan.run_id, execution, {"shards": len(shards), "shards_done": 0})
    manifest = write_json(
        s3, layout.round_manifest(1), [{"prefix": prefix}, *(s["name"] for s in shards)]
    )
    return Round(
        number=1, manifest=manifest, complete=False, shards=len(shards), missing=len(shards)
    )


def _input_base(input_uri: str) -> str:
    """The part of ``input_uri`` that output names are relative to (up to the last ``/``)."""
    return input_uri[: input_uri.rfind("/") + 1]
