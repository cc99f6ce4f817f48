"""Finalize: ``_manifest.json`` and ``_SUCCESS`` in the output prefix, the RUN item
SUCCEEDED with counts, and the run-finished announcements.

The output prefix then looks as ``batchinfer run`` leaves a local output directory: one
``<name>.out`` per input object when merged (R12: each input object gives one output named after
it; the MergeOutputs Map wrote them, one MergeObject per input object), else one per shard.
Finalize reads the shard list and the SHARD items' counts; it copies nothing.
"""

from itertools import groupby
from typing import Any

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.state import RunEnd, RunPlan, ShardEntry
from batchinfer.pipeline.jobs.run_model import delete_run_model
from batchinfer.pipeline.storage.notify import announce
from batchinfer.pipeline.storage.s3io import read_json_lines, run_settings, write_json
from batchinfer.pipeline.storage.status_table import SUCCEEDED, StatusTable, now
from batchinfer.transform.assemble import RESULT_MANIFEST, SUCCESS_MARKER, output_name
from batchinfer.uris import parse_s3_uri


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
    layout = plan.layout
    output = parse_s3_uri(plan.output)
    parts = parse_s3_uri(plan.job_output)
    items = {item["shard"]: item for item in table.shards(run_id)}
    lines = read_json_lines(s3, layout.shard_list)  # streamed, one input object at a time
    shards = (ShardEntry.from_line(line) for line in lines)
    files = []
    for input_name, grouped in groupby(shards, key=lambda s: s.input_name):
        group = list(grouped)
        if plan.merge:
            names = [output_name(input_name)]
        else:
            outputs = (parts.child(output_name(s.name)) for s in group)
            names = [o.key[len(output.key) :] for o in outputs]
        counts = [items.get(s.number, {}) for s in group]
        files.append(
            {
                "name": input_name,
                "input": group[0].input,
                "output": ", ".join(names),
                "status": SUCCEEDED,
                "records_in": _total(counts, "records_in"),
                "records_out": _total(counts, "records_out"),
                "records_not_counted": plan.settings.records_not_counted,
                "shards": len(group),
            }
        )
    totals = {
        "files": len(files),
        "shards": sum(f["shards"] for f in files),
        "records_in": _total(files, "records_in"),
        "records_out": _total(files, "records_out"),
    }
    manifest = {
        "status": SUCCEEDED,
        "run_id": run_id,
        "engine": plan.engine,
        "input": plan.input,
        "output": plan.output,
        "execution": execution,
        "finished_at": now(),
        "settings": run_settings(s3, plan).to_state(),
        "files": files,
        "totals": totals,
    }
    write_json(s3, output.child(RESULT_MANIFEST), manifest)
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
        "finished_at": manifest["finished_at"],
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


def _total(items: list[dict[str, Any]], key: str) -> int | None:
    values = [item.get(key) for item in items]
    counted = [v for v in values if v is not None]
    return sum(int(v) for v in counted) if len(counted) == len(values) else None
