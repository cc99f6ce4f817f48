"""``batchinfer plan --tune``: the batch settings that move the sample fastest.

The usual advice for batch inference is to raise the batch size until throughput stops
rising. A transform job's batch is MaxPayloadInMB of records per request (BatchStrategy
MULTI_RECORD) and MaxConcurrentTransforms requests in flight at once (R9: each instance keeps
MaxConcurrentTransforms requests in flight; R10: the job's batch settings, else the container's,
else defaults), so the sample is transformed by the real model server (the calibration of
:mod:`calibrate`) at each pair of a grid of both, and the fastest pair that fits the payload rule is
recommended: the largest record fits MaxPayloadInMB (R8: a record larger than MaxPayloadInMB fails
its file) and MaxConcurrentTransforms x MaxPayloadInMB is at most 100 (R1: a request outside
CreateTransformJob's limits is refused). Pairs that break the rule are listed, not measured.
"""

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from batchinfer.planning.calibrate import calibrate
from batchinfer.transform.settings import MAX_PAYLOAD_X_CONCURRENCY_MB, TransformSettings
from batchinfer.units import MIB

PAYLOADS_MB = (1, 2, 4, 6, 8, 16, 32, 64, 100)
CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class TunePoint:
    max_payload_mb: int
    max_concurrent_transforms: int
    records_per_request: int  # about: MaxPayloadInMB over the sample's mean record, at most all
    fits: bool
    reason: str | None = None  # why it does not fit
    rows_per_second: float | None = None  # None: not measured
    requests: int | None = None  # the sample took


def grid(
    largest_record: int, sample_bytes: int, sample_records: int, local_cpus: int
) -> list[TunePoint]:
    """The pairs to try: payloads up to the first that holds the whole sample in one request
    (larger ones send the same), concurrencies up to this machine's CPUs (one server worker
    each: more requests only queue); the pairs that break the payload rule unmeasured."""
    mean = sample_bytes / max(1, sample_records)
    payloads = []
    for payload in PAYLOADS_MB:
        payloads.append(payload)
        if payload * MIB >= sample_bytes:
            break
    concurrencies = [c for c in CONCURRENCIES if c <= max(1, local_cpus)]
    points = []
    for payload in payloads:
        for concurrency in concurrencies:
            points.append(
                TunePoint(
                    payload,
                    concurrency,
                    min(sample_records, max(1, math.floor(payload * MIB / mean))) if mean else 1,
                    *_rule(payload, concurrency, largest_record),
                )
            )
    return points


def _rule(payload: int, concurrency: int, largest_record: int) -> tuple[bool, str | None]:
    if largest_record > payload * MIB:
        return False, f"the largest record ({largest_record:,} bytes) is over {payload} MB (R8)"
    if payload * concurrency > MAX_PAYLOAD_X_CONCURRENCY_MB:
        return False, (
            f"{concurrency} x {payload} MB is over {MAX_PAYLOAD_X_CONCURRENCY_MB} MB (R1)"
        )
    return True, None


def recommend(points: list[TunePoint]) -> TunePoint | None:
    """The fastest measured pair that fits the payload rule; of equal speeds, the smaller
    payload, then the fewer requests in flight."""
    fitting = [p for p in points if p.fits and p.rows_per_second is not None]
    if not fitting:
        return None
    return max(
        fitting,
        key=lambda p: (p.rows_per_second, -p.max_payload_mb, -p.max_concurrent_transforms),
    )


def sweep(
    model: Path,
    settings: TransformSettings,
    records: list[bytes],
    largest_record: int,
    local_cpus: int,
    on_point: Callable[[TunePoint], None] = lambda _p: None,
) -> list[TunePoint]:
    """Measure every fitting pair of :func:`grid` on the sample ``records`` (Line records)
    with the transform engine, as ``batchinfer plan --model`` calibrates."""
    points = grid(largest_record, sum(map(len, records)), len(records), local_cpus)
    measured = []
    for point in points:
        if point.fits:
            tried = replace(
                settings,
                max_payload_mb=point.max_payload_mb,
                max_concurrent_transforms=point.max_concurrent_transforms,
            )
            result = calibrate(model, "transform", tried, records=records)
            point = replace(point, rows_per_second=result.rows_per_second, requests=result.requests)
        on_point(point)
        measured.append(point)
    return measured


def tune_json(points: list[TunePoint]) -> dict[str, Any]:
    best = recommend(points)
    return {
        "points": [asdict(p) for p in points],
        "recommended": None if best is None else asdict(best),
    }
