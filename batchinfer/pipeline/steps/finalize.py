"""Finalize: ``_manifest.json`` and ``_SUCCESS`` in the output prefix, the RUN item
SUCCEEDED with counts, and the run-finished announcements.

The output prefix then looks as ``batchinfer run`` leaves a local output directory: one
``<name>.out`` per input object when merged (R12: each input object gives one output named after
it; the MergeOutputs Map wrote them, one MergeObject per input object), else one per shard.
Finalize reads the shard list and the SHARD items' counts; it copies nothing. Its memory
does not grow with the input objects and holds 16 bytes a shard: the counts are read into
two arrays, the shard list is streamed one input object at a time and the manifest's files
are spooled (to /tmp past 8 MiB) before one upload.
"""

import json
from array import array
from collections.abc import Iterator
from itertools import groupby
from tempfile import SpooledTemporaryFile
from typing import Any

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.state import RunEnd, RunPlan, ShardEntry
from batchinfer.pipeline.jobs.run_model import delete_run_model
from batchinfer.pipeline.storage.notify import announce
from batchinfer.pipeline.storage.s3io import (
    SPOOL_MEMORY,
    SPOOL_UPLOAD,
    read_json_lines,
    run_settings,
)
from batchinfer.pipeline.storage.status_table import SUCCEEDED, StatusTable, now
from batchinfer.transform.assemble import RESULT_MANIFEST, SUCCESS_MARKER, output_name
from batchinfer.uris import S3Location, parse_s3_uri

# Bytes a read of the shard list takes (its lines are a few hundred bytes): botocore splits
# each read into lines, so a read costs about three times its size in memory.
SHARD_LIST_CHUNK = 1024 * 1024


def finalize(
    plan: RunPlan,
    *,
    execution: str,
    env: PipelineEnvironment,
    s3: Any,
    table: StatusTable,
    events: Any,
    sns: Any,
    sagemaker: Any,
) -> RunEnd:
    run_id = plan.run_id
    output = parse_s3_uri(plan.output)
    records_in, records_out = table.shard_records(run_id)
    files = _files(plan, s3, records_in, records_out)
    head = {
        "status": SUCCEEDED,
        "run_id": run_id,
        "engine": plan.engine,
        "input": plan.input,
        "output": plan.output,
        "execution": execution,
        "finished_at": now(),
        "settings": run_settings(s3, plan).to_state(),
    }
    totals = _write_manifest(s3, output.child(RESULT_MANIFEST), head, files)
    s3.put_object(Bucket=output.bucket, Key=output.child(SUCCESS_MARKER).key, Body=b"")
    run = RunEnd(
        run_id=run_id,
        status=SUCCEEDED,
        output=plan.output,
        execution=execution,
        records_in=totals["records_in"],
        records_out=totals["records_out"],
        shards=totals["shards"],
    )
    attributes = {
        "run_status": SUCCEEDED,
        "finished_at": head["finished_at"],
        "manifest": output.child(RESULT_MANIFEST).uri,
    } | {
        key: value
        for key, value in (("records_in", run.records_in), ("records_out", run.records_out))
        if value is not None
    }
    if plan.model_name:
        delete_run_model(plan.model_name, sagemaker)
    table.update_run(run_id, execution, attributes)
    announce(run, env=env, events=events, sns=sns, table=table)
    return run


def _files(
    plan: RunPlan, s3: Any, records_in: array, records_out: array
) -> Iterator[dict[str, Any]]:
    """The manifest's entry of each input object, from the shard list (streamed, one input
    object at a time) and the shards' counts."""
    output = parse_s3_uri(plan.output)
    parts = parse_s3_uri(plan.job_output)
    lines = read_json_lines(s3, plan.layout.shard_list, chunk=SHARD_LIST_CHUNK)
    shards = (ShardEntry.from_line(line) for line in lines)
    for input_name, grouped in groupby(shards, key=lambda s: s.input_name):
        group = list(grouped)
        if plan.merge:
            names = [output_name(input_name)]
        else:
            outputs = (parts.child(output_name(s.name)) for s in group)
            names = [o.key[len(output.key) :] for o in outputs]
        yield {
            "name": input_name,
            "input": group[0].input,
            "output": ", ".join(names),
            "status": SUCCEEDED,
            "records_in": _total(records_in, group),
            "records_out": _total(records_out, group),
            "records_not_counted": plan.settings.records_not_counted,
            "shards": len(group),
        }


def _total(counts: array, group: list[ShardEntry]) -> int | None:
    """The sum of the group's counts; None when one of them was not counted."""
    values = [counts[s.number] if s.number < len(counts) else -1 for s in group]
    return None if -1 in values else sum(values)


def _write_manifest(
    s3: Any, location: S3Location, head: dict[str, Any], files: Iterator[dict[str, Any]]
) -> dict[str, Any]:
    """Write ``_manifest.json``: ``head``'s fields, ``files`` (spooled one at a time) and
    their ``totals``, which it returns."""
    totals: dict[str, Any] = {"files": 0, "shards": 0, "records_in": 0, "records_out": 0}
    with SpooledTemporaryFile(max_size=SPOOL_MEMORY) as spool:
        spool.write(json.dumps(head)[:-1].encode() + b', "files": [')
        for entry in files:
            spool.write((b",\n" if totals["files"] else b"\n") + json.dumps(entry).encode())
            totals["files"] += 1
            totals["shards"] += entry["shards"]
            for key in ("records_in", "records_out"):
                counted = totals[key] is not None and entry[key] is not None
                totals[key] = totals[key] + entry[key] if counted else None
        spool.write(b'\n], "totals": ' + json.dumps(totals).encode() + b"}\n")
        spool.seek(0)
        s3.upload_fileobj(
            spool,
            location.bucket,
            location.key,
            ExtraArgs={"ContentType": "application/json"},
            Config=SPOOL_UPLOAD,
        )
    return totals
