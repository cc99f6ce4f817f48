"""Finalize: ``_manifest.json`` and ``_SUCCESS`` in the output prefix, the RUN item
SUCCEEDED with counts, and the run-finished announcements.

The output prefix then looks as ``batchinfer run`` leaves a local output directory: one
``<name>.out`` per input object when merged (R12: each input object gives one output named after
it; the MergeOutputs Map wrote them, one MergeObject per input object), else one per shard.
Finalize reads the shard list and the SHARD items' counts; it copies nothing but the
errors files of a merged run's records set aside (``bad_records`` quarantine: one per
object with any, its shards' errors files renumbered). Its memory does not grow with the
input objects and holds 16 bytes a shard (24 with quarantine): the counts are read into
arrays, the shard list is streamed one input object at a time and the manifest's files
are spooled (to /tmp past 8 MiB) before one upload.
"""

import json
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby
from tempfile import SpooledTemporaryFile
from typing import Any

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.run_errors import DataFailure
from batchinfer.pipeline.contract.state import RunEnd, RunPlan, ShardEntry
from batchinfer.pipeline.jobs.run_model import delete_run_model
from batchinfer.pipeline.storage.notify import announce
from batchinfer.pipeline.storage.s3io import (
    SPOOL_MEMORY,
    SPOOL_UPLOAD,
    read_json_lines,
    run_settings,
)
from batchinfer.pipeline.storage.set_aside import ERRORS_CONTENT_TYPE, upload, whole_lines
from batchinfer.pipeline.storage.status_table import SUCCEEDED, StatusTable, now
from batchinfer.transform.assemble import RESULT_MANIFEST, SUCCESS_MARKER, output_name
from batchinfer.transform.bad_records import ERRORS_SUFFIX, errors_name, renumbered
from batchinfer.uris import S3Location, parse_s3_uri

# Bytes a read of the shard list takes (its lines are a few hundred bytes): botocore splits
# each read into lines, so a read costs about three times its size in memory.
SHARD_LIST_CHUNK = 1024 * 1024
# Errors files of records set aside the run-finished announcements name (the manifest
# names them all).
ERRORS_FILES_SHOWN = 10


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
    quarantine = plan.settings.bad_record_allowance is not None
    counts = Counts(*table.shard_records(run_id, set_aside=quarantine))
    errors_files: list[str] = []
    files = _files(plan, s3, counts, errors_files)
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
        records_quarantined=totals["records_quarantined"],
        errors_files=errors_files[:ERRORS_FILES_SHOWN] or None,
        errors_files_cut=len(errors_files) > ERRORS_FILES_SHOWN or None,
    )
    attributes = {
        "run_status": SUCCEEDED,
        "finished_at": head["finished_at"],
        "manifest": output.child(RESULT_MANIFEST).uri,
    } | {
        key: value
        for key, value in (
            ("records_in", run.records_in),
            ("records_out", run.records_out),
            ("records_quarantined", run.records_quarantined),
        )
        if value is not None
    }
    if plan.model_name:
        delete_run_model(plan.model_name, sagemaker)
    table.update_run(run_id, execution, attributes)
    announce(run, env=env, events=events, sns=sns, table=table)
    return run


@dataclass(frozen=True)
class Counts:
    """The shards' counts by shard number (-1: not counted; none set aside without
    quarantine)."""

    records_in: array
    records_out: array
    records_quarantined: array = field(default_factory=lambda: array("q"))


def _files(
    plan: RunPlan, s3: Any, counts: Counts, errors_files: list[str]
) -> Iterator[dict[str, Any]]:
    """The manifest's entry of each input object, from the shard list (streamed, one input
    object at a time) and the shards' counts; the errors files of records set aside (a
    merged run's written here: :func:`_merged_errors`) are added to ``errors_files``, up to
    one more than the announcements show.
    DataFailure names an input that set aside more than ``max_bad_records``."""
    output = parse_s3_uri(plan.output)
    parts = parse_s3_uri(plan.job_output)
    allowance = plan.settings.bad_record_allowance
    lines = read_json_lines(s3, plan.layout.shard_list, chunk=SHARD_LIST_CHUNK)
    shards = (ShardEntry.from_line(line) for line in lines)
    for input_name, grouped in groupby(shards, key=lambda s: s.input_name):
        group = list(grouped)
        set_aside = None if allowance is None else _total(counts.records_quarantined, group)
        if allowance is not None and set_aside is not None and set_aside > allowance:
            raise DataFailure(
                f"{group[0].input}: {set_aside} records set aside, more than "
                f"max_bad_records {allowance}: the run fails (its outputs stay, without "
                f"{RESULT_MANIFEST} and {SUCCESS_MARKER})"
            )
        if plan.merge:
            outputs = [output.child(output_name(input_name))]
            if set_aside:
                outputs.append(_merged_errors(s3, parts, outputs[0], group, counts))
        else:
            outputs = []
            for shard in group:
                outputs.append(parts.child(output_name(shard.name)))
                if _value(counts.records_quarantined, shard) > 0:
                    outputs.append(parts.child(errors_name(output_name(shard.name))))
        named = [o.uri for o in outputs if o.key.endswith(ERRORS_SUFFIX)]
        errors_files += named[: ERRORS_FILES_SHOWN + 1 - len(errors_files)]
        yield {
            "name": input_name,
            "input": group[0].input,
            "output": ", ".join(o.key[len(output.key) :] for o in outputs),
            "status": SUCCEEDED,
            "records_in": _total(counts.records_in, group),
            "records_out": _total(counts.records_out, group),
            "records_quarantined": set_aside,
            "records_not_counted": plan.settings.records_not_counted,
            "shards": len(group),
        }


def _merged_errors(
    s3: Any, parts: S3Location, target: S3Location, group: list[ShardEntry], counts: Counts
) -> S3Location:
    """One input's errors file beside its merged output ``target``: its shards' errors
    files in order, streamed, each record numbered in the input (after the records of the
    shards before it). Written again, it is the same bytes."""
    errors = S3Location(target.bucket, errors_name(target.key))
    with upload(s3, errors, ERRORS_CONTENT_TYPE) as merged:
        before = 0
        for shard in group:
            if _value(counts.records_quarantined, shard) > 0:
                part = parts.child(errors_name(output_name(shard.name)))
                for lines in whole_lines(s3, part):
                    merged.write(renumbered(lines, group[0].input_name, before))
            before += _value(counts.records_in, shard)
    return errors


def _value(counts: array, shard: ShardEntry) -> int:
    return counts[shard.number] if shard.number < len(counts) else -1


def _total(counts: array, group: list[ShardEntry]) -> int | None:
    """The sum of the group's counts; None when one of them was not counted."""
    values = [_value(counts, s) for s in group]
    return None if -1 in values else sum(values)


def _write_manifest(
    s3: Any, location: S3Location, head: dict[str, Any], files: Iterator[dict[str, Any]]
) -> dict[str, Any]:
    """Write ``_manifest.json``: ``head``'s fields, ``files`` (spooled one at a time) and
    their ``totals``, which it returns."""
    counts = ("records_in", "records_out", "records_quarantined")  # None once one is None
    totals: dict[str, Any] = dict.fromkeys(("files", "shards", *counts), 0)
    with SpooledTemporaryFile(max_size=SPOOL_MEMORY) as spool:
        spool.write(json.dumps(head)[:-1].encode() + b', "files": [')
        for entry in files:
            spool.write((b",\n" if totals["files"] else b"\n") + json.dumps(entry).encode())
            totals["files"] += 1
            totals["shards"] += entry["shards"]
            for key in counts:
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
