"""Verify: every shard has its output and, for Line records, as many output records as
input records. Missing shards go to a new ManifestFile for the next round (only those,
spec R4); after the last round the run fails naming them."""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any

from batchinfer.pipeline.run_errors import DataFailure, JobStopped, ShardsMissing
from batchinfer.pipeline.s3io import count_lines, object_size, read_json, write_json
from batchinfer.pipeline.state import JOB_STOPPED, JobOutcome, Round, RunPlan
from batchinfer.pipeline.status_table import MISSING, SUCCEEDED, StatusTable, now
from batchinfer.transform.assemble import output_name
from batchinfer.uris import parse_s3_uri

SHOWN = 10
# Shards counted at once: S3 streams are slow one by one, fast side by side.
PARALLEL_CHECKS = 16


def verify(
    plan: RunPlan,
    round_: Round,
    outcome: JobOutcome,
    *,
    execution: str,
    s3: Any,
    table: StatusTable,
) -> Round:
    """Check round ``round_`` after the job of ``outcome``; return the next round, or this
    one ``complete``."""
    run_id, number = plan.run_id, round_.number
    layout = plan.layout
    shards = read_json(s3, layout.shard_list)
    counted = plan.settings.counts_records
    succeeded = {i["shard"] for i in table.shards(run_id) if i.get("status") == SUCCEEDED}
    missing: list[tuple[dict[str, Any], str]] = []
    pending = [shard for shard in shards if shard["number"] not in succeeded]
    outputs = [
        parse_s3_uri(plan.job_output).child(output_name(shard["name"])).uri for shard in pending
    ]
    with ThreadPoolExecutor(PARALLEL_CHECKS) as pool:  # shards are read in parallel streams
        results = list(pool.map(partial(_check, s3, plan, counted=counted), pending, outputs))
    with table.shard_writer(run_id) as put_shard:  # 25 items a request
        for shard, output, (problem, records) in zip(pending, outputs, results, strict=True):
            attributes: dict[str, Any] = {
                "name": shard["name"],
                "input": shard["input"],
                "job_name": outcome.name,
                "attempts": number,
                "updated_at": now(),
            }
            if problem is None:
                put_shard(
                    shard["number"], attributes | {"status": SUCCEEDED, "output": output, **records}
                )
            else:
                missing.append((shard, problem))
                put_shard(shard["number"], attributes | {"status": MISSING, "reason": problem})
    done = len(shards) - len(missing)
    table.update_run(run_id, execution, {"shards": len(shards), "shards_done": done})
    if outcome.status == JOB_STOPPED:
        raise JobStopped(
            f"{outcome.describe()}: stopped from outside the pipeline, so the run stops too; "
            f"{done} of {len(shards)} shards have their output"
        )
    if not missing:
        return replace(round_, complete=True, shards=len(shards), missing=0)
    listed = "; ".join(f"{s['name']}: {why}" for s, why in missing[:SHOWN])
    more = f" (and {len(missing) - SHOWN} more)" if len(missing) > SHOWN else ""
    if outcome.data_failure:
        raise DataFailure(
            f"{outcome.describe()}; no new round, the data would fail again; shards without "
            f"output: {listed}{more}"
        )
    if number >= plan.max_rounds:
        raise ShardsMissing(
            f"{len(missing)} of {len(shards)} shards have no valid output after {number} job "
            f"round(s); last {outcome.describe()}; shards: {listed}{more}"
        )
    manifest = write_json(
        s3,
        layout.round_manifest(number + 1),
        [{"prefix": plan.shards_prefix}, *(s["name"] for s, _ in missing)],
    )
    return Round(
        number=number + 1,
        manifest=manifest,
        complete=False,
        shards=len(shards),
        missing=len(missing),
    )


def _check(
    s3: Any, plan: RunPlan, shard: dict[str, Any], output: str, counted: bool
) -> tuple[str | None, dict[str, int]]:
    """(what is wrong or None, record counts) for one shard's output."""
    if object_size(s3, output) is None:
        return f"no output {output}", {}
    if not counted:
        return None, {}
    source = parse_s3_uri(plan.shards_prefix).child(shard["name"]).uri
    records_in = count_lines(s3, source, gzip=shard["compression"] == "Gzip")
    records_out = count_lines(s3, output)
    if records_in != records_out:
        return f"output has {records_out} records, input {records_in}", {}
    return None, {"records_in": records_in, "records_out": records_out}
