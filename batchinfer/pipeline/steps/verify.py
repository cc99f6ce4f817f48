"""Verify: after a round's job, gather the CountShards Map's checks of the round's shards
(one :class:`ShardCount` a shard, read from the Map's result files) into SHARD items and
the next round. Shards without a valid output go to a new ManifestFile and shard list for
the next round (only those, spec R4: a key prefix or a ManifestFile selects the input objects);
after the last round the run fails naming them. A job that failed for want of capacity
gives the next round a wait (``wait_seconds``, doubling each round); one SageMaker stopped
at its runtime limit is a failure like any other, one stopped from outside stops the run.

Verify reads no shard and no output itself, and holds at most :data:`SHOWN` checks: the
results are streamed one line (one shard's check) at a time and the next round's lists are
spooled to /tmp."""

import heapq
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from batchinfer.pipeline.contract.limits import capacity_wait_seconds
from batchinfer.pipeline.contract.run_errors import (
    DataFailure,
    JobStopped,
    MapItemFailed,
    ShardsMissing,
)
from batchinfer.pipeline.contract.state import JobOutcome, Round, RunPlan, ShardCount
from batchinfer.pipeline.storage.map_results import MapResults, describe_failures, shard_name
from batchinfer.pipeline.storage.s3io import SpooledJson
from batchinfer.pipeline.storage.status_table import MISSING, SUCCEEDED, StatusTable, now
from batchinfer.uris import S3Location

SHOWN = 10


def verify(
    plan: RunPlan,
    round_: Round,
    outcome: JobOutcome,
    *,
    counts: str,
    execution: str,
    s3: Any,
    table: StatusTable,
    capacity_wait: int,
) -> Round:
    """Gather the checks of round ``round_`` (``counts``: the key of the Map's result
    manifest) after the job of ``outcome``; return the next round, or this one
    ``complete``. ``capacity_wait``: the seconds before the second round when the first
    job failed for want of capacity."""
    run_id, number = plan.run_id, round_.number
    layout = plan.layout
    missing = 0
    shown: list[tuple[int, str, str]] = []  # the first SHOWN missing: (number, name, why)
    with SpooledJson("array") as manifest, SpooledJson("lines") as next_shards:
        manifest.add({"prefix": plan.shards_prefix})
        with table.shard_writer(run_id) as put_shard:  # 25 items a request
            for count in read_counts(s3, S3Location(layout.bucket, counts)):
                shard = count.shard
                attributes: dict[str, Any] = {
                    "name": shard.name,
                    "input": shard.input,
                    "job_name": outcome.name,
                    "attempts": number,
                    "updated_at": now(),
                }
                if count.problem is None:
                    valid = {"status": SUCCEEDED, "output": count.output, **count.records}
                    put_shard(shard.number, attributes | valid)
                    continue
                missing += 1
                put_shard(shard.number, attributes | {"status": MISSING, "reason": count.problem})
                manifest.add(shard.name)
                next_shards.add(shard.to_line())
                entry = (-shard.number, shard.name, count.problem)
                if len(shown) < SHOWN:
                    heapq.heappush(shown, entry)
                else:
                    heapq.heappushpop(shown, entry)
        shards = round_.shards
        done = shards - missing
        table.update_run(run_id, execution, {"shards": shards, "shards_done": done})
        if outcome.stopped_from_outside:
            raise JobStopped(
                f"{outcome.describe()}: stopped from outside the pipeline, so the run stops "
                f"too; {done} of {shards} shards have their output"
            )
        if not missing:
            return replace(round_, complete=True, missing=0)
        listed = "; ".join(f"{name}: {why}" for _, name, why in sorted(shown, reverse=True))
        more = f" (and {missing - SHOWN} more)" if missing > SHOWN else ""
        if outcome.data_failure:
            raise DataFailure(
                f"{outcome.describe()}; no new round, the data would fail again; shards "
                f"without output: {listed}{more}"
            )
        if number >= plan.max_rounds:
            raise ShardsMissing(
                f"{missing} of {shards} shards have no valid output after {number} job "
                f"round(s); last {outcome.describe()}; shards: {listed}{more}"
            )
        next_shards.upload(s3, layout.round_shards(number + 1))
        return Round(
            number=number + 1,
            manifest=manifest.upload(s3, layout.round_manifest(number + 1)),
            complete=False,
            shards=shards,
            missing=missing,
            shards_key=layout.round_shards(number + 1).key,
            wait_seconds=capacity_wait_seconds(capacity_wait, number)
            if outcome.capacity_failure
            else 0,
        )


def read_counts(s3: Any, manifest: S3Location) -> Iterator[ShardCount]:
    """The checks in the result files a CountShards Map's manifest lists, streamed one line
    at a time; MapItemFailed naming the shards whose check failed, with its error and cause."""
    results = MapResults.read(s3, manifest)
    results.unfinished()
    failed = describe_failures(results.failures(s3), shard_name)
    if failed:
        raise MapItemFailed(f"{manifest.uri}: shard checks failed: {failed}")
    for output in results.outputs(s3):
        yield ShardCount.from_state(output)
