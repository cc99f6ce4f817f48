"""``batchinfer plan --tune``: the batch settings that move the sample fastest.

The usual advice for batch inference is to raise the batch size until throughput stops
rising. A transform job batches at two levels. A request holds MaxPayloadInMB of records
(BatchStrategy MULTI_RECORD), and R9: each instance keeps MaxConcurrentTransforms requests
in flight (R10: the job's batch settings, else the container's, else defaults). Then the
model server splits each request into forward passes of at most
``BATCHINFER_MAX_BATCH_RECORDS`` records (``--max-batch-records``).

The sweep goes in two stages, each point measured by the real model server (the calibration
of :mod:`calibrate`), each point's sample sent ``PASSES`` times after a pass that warms the
server up, and the median kept with the spread:

1. payload x concurrency: along each concurrency, payloads rise until throughput clearly
   falls (the point's fastest pass is below the best point's slowest). Pairs that break the
   payload rule are listed, not measured: the largest record must fit MaxPayloadInMB (R8: a
   record larger than it fails its file), and MaxConcurrentTransforms x MaxPayloadInMB is at
   most 100 (R1: a request outside CreateTransformJob's limits is refused). With SplitType
   None (R6: the whole object is one request) MaxPayloadInMB stays the job's, which only has
   to hold the largest object, and the concurrency alone rises, up to two requests a core,
   until throughput clearly falls;
2. forward batch: at the pair recommended by stage 1, forward passes of 64, 128, ... records
   up to the server's default pass (65,536 records, or a whole request when it is
   smaller), rising until throughput clearly falls;
3. workers x threads: at the point recommended so far, this machine's cores split between
   model server workers (SAGEMAKER_MODEL_SERVER_WORKERS) and the native threads of each
   (OMP_NUM_THREADS): one worker per core with one thread each (the default), down to one
   worker with every core. More threads per worker trade the parallelism of requests for
   that of each forward pass, and every worker holds its own copy of the model.

The recommendation is the fastest point by median, except that a point whose median lies
within its spread (its slowest to its fastest pass) and that needs less memory (a smaller
payload, then a smaller forward batch, then fewer workers, then fewer requests in flight)
is recommended in its place: the sample cannot tell them apart, and memory is what a
larger batch costs (on a GPU, what runs out). A point whose passes merely overlap the
fastest's, its median below the fastest's slowest pass, is usually slower: with three
passes on a busy machine most spreads overlap, and that test alone would hand the
recommendation to the smallest batch tried.
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from batchinfer.engine.inputs import InputFile
from batchinfer.planning.calibrate import calibrate
from batchinfer.planning.object_records import object_records
from batchinfer.transform.server_limits import (
    DEFAULT_BATCH_RECORDS,
    MAX_BATCH_RECORDS_VAR,
    WORKERS_VAR,
)
from batchinfer.transform.settings import MAX_PAYLOAD_X_CONCURRENCY_MB, TransformSettings
from batchinfer.units import MIB

PAYLOADS_MB = (1, 2, 4, 6, 8, 16, 32, 64, 100)
CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)
FORWARD_BATCHES = tuple(2**n for n in range(6, 17))  # 64 .. 65,536 records
THREADS_VAR = "OMP_NUM_THREADS"  # every native pool's threads, and PyTorch's
PASSES = 3  # measurements of each point, after one pass that warms the server up


@dataclass(frozen=True)
class TunePoint:
    max_payload_mb: int
    max_concurrent_transforms: int
    # About: MaxPayloadInMB over the sample's mean record, at most all; with whole objects the
    # largest object's records, None where its content type does not say.
    records_per_request: int | None
    fits: bool
    reason: str | None = None  # why it does not fit
    rows_per_second: float | None = None  # median of the passes, in unit; None: not measured
    requests: int | None = None  # one pass over the sample took
    max_batch_records: int | None = None  # records per forward pass; None: the server's default
    passes: tuple[float, ...] = ()  # the rate of each pass over the sample, in unit
    # Model server workers and native threads per worker; None: the defaults (one worker
    # per core, the cores shared among them).
    workers: int | None = None
    threads: int | None = None
    unit: str = "rows/s"  # what rows_per_second counts: "objects/s" for whole objects
    whole_objects: bool = False  # SplitType None: each object one request

    @property
    def slowest(self) -> float:
        return min(self.passes, default=self.rows_per_second or 0.0)

    @property
    def fastest(self) -> float:
        return max(self.passes, default=self.rows_per_second or 0.0)

    @property
    def forward_records(self) -> int:
        """The records of one forward pass: the batch, or a request's records where they are
        fewer (for whole objects of a type that does not say how many, the batch)."""
        batch = self.max_batch_records or DEFAULT_BATCH_RECORDS
        return batch if self.records_per_request is None else min(batch, self.records_per_request)


def grid(
    largest_record: int, sample_bytes: int, sample_records: int, local_cpus: int
) -> list[TunePoint]:
    """The pairs to try: payloads up to the first that holds the whole sample in one request
    (larger ones send the same), concurrencies up to this machine's CPUs (one server worker
    each); the pairs that break the payload rule unmeasured."""
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


def _measured(points: list[TunePoint]) -> list[TunePoint]:
    return [p for p in points if p.fits and p.rows_per_second is not None]


def _fastest(measured: list[TunePoint]) -> TunePoint:
    """The measured point of the highest median."""
    return max(measured, key=lambda p: p.rows_per_second or 0.0)


def tied(point: TunePoint, best: TunePoint) -> bool:
    """Whether the median of ``point`` lies within the passes of ``best`` (its slowest to
    its fastest): the sample cannot tell them apart."""
    return best.slowest <= (point.rows_per_second or 0.0) <= best.fastest


def clearly_slower(point: TunePoint, best: TunePoint) -> bool:
    """Whether even the fastest pass of ``point`` is slower than the slowest of ``best``."""
    return point.fastest < best.slowest


def _memory(point: TunePoint) -> tuple[float, ...]:
    workers = math.inf if point.workers is None else point.workers  # default: one per core
    return point.max_payload_mb, point.forward_records, workers, point.max_concurrent_transforms


def recommend(points: list[TunePoint]) -> TunePoint | None:
    """The fastest measured point that fits the payload rule (by median), or in its place
    the one needing least memory among those the sample cannot tell from it (:func:`tied`);
    of equal memory, the faster."""
    measured = _measured(points)
    if not measured:
        return None
    best = _fastest(measured)
    candidates = [p for p in measured if tied(p, best)]
    return min(candidates, key=lambda p: (*_memory(p), -(p.rows_per_second or 0.0)))


def indistinct(points: list[TunePoint]) -> bool:
    """Whether no measured point is clearly slower than the fastest: the sample is too small
    (or the machine too noisy) to tell the points apart."""
    measured = _measured(points)
    if len(measured) < 2:
        return False
    best = _fastest(measured)
    return not any(clearly_slower(p, best) for p in measured)


def _falls(point: TunePoint, line: list[TunePoint]) -> bool:
    """Whether ``point`` is clearly slower than the best measured before it on its line."""
    earlier = _measured(line)
    if not earlier or point.rows_per_second is None:
        return False
    return clearly_slower(point, _fastest(earlier))


Measure = Callable[[TunePoint], TunePoint]


def sweep(
    model: Path,
    settings: TransformSettings,
    records: list[bytes],
    largest_record: int,
    local_cpus: int,
    on_point: Callable[[TunePoint], None] = lambda _p: None,
) -> list[TunePoint]:
    """Measure the points of every stage (see the module docstring) on the sample
    ``records`` (Line records) with the transform engine, as ``batchinfer plan --model``
    calibrates; unmeasured points past a fall are left out."""
    measure = _measurer(model, settings, records=records)
    points = grid(largest_record, sum(map(len, records)), len(records), local_cpus)
    swept: list[TunePoint] = []
    for concurrency in sorted({p.max_concurrent_transforms for p in points}):
        line = [p for p in points if p.max_concurrent_transforms == concurrency]
        swept.extend(_rising(measure, line, on_point))
    return _refine(measure, swept, local_cpus, on_point)


def sweep_objects(
    model: Path,
    settings: TransformSettings,
    objects: list[InputFile],
    local_cpus: int,
    on_point: Callable[[TunePoint], None] = lambda _p: None,
    *,
    header: bool = False,
) -> list[TunePoint]:
    """The sweep for SplitType None: each of the sampled ``objects`` (without their first
    line when they start with a ``header``) is one request of the job's MaxPayloadInMB, so
    stage 1 is MaxConcurrentTransforms alone (:func:`object_grid`), rising until throughput
    clearly falls; the forward batches and workers x threads follow as for Line records."""
    measure = _measurer(model, settings, objects=objects, header=header)
    payload = settings.resolve().max_payload_mb
    counted = [object_records(o, settings) for o in objects]
    records = None if None in counted else max(filter(None, counted), default=None)
    unit = "rows/s" if settings.parquet_in else "objects/s"  # a Parquet object's records: rows
    line = object_grid(payload, len(objects), local_cpus, records, unit)
    return _refine(measure, _rising(measure, line, on_point), local_cpus, on_point)


def object_grid(
    payload_mb: int,
    objects: int,
    local_cpus: int,
    records: int | None = None,
    unit: str = "objects/s",
) -> list[TunePoint]:
    """MaxConcurrentTransforms for whole objects (of at most ``records`` records, None where
    unknown): up to two requests per core (a worker's next object then waits at its socket
    while it answers the one before, instead of the worker waiting while the engine reads
    and sends it), no more than the objects of one pass over the sample (so a pass never
    waits on the one before it to fill the requests in flight), and within R1 (times
    MaxPayloadInMB at most 100)."""
    return [
        TunePoint(payload_mb, c, records, *_rule(payload_mb, c, 0), unit=unit, whole_objects=True)
        for c in CONCURRENCIES
        if c <= most_in_flight(objects, local_cpus)
    ]


def most_in_flight(objects: int, local_cpus: int) -> int:
    """The most requests in flight the sweep of whole objects tries: a power of two, up to
    two a core and up to ``objects``, one at the least."""
    bound = max(1, min(2 * local_cpus, objects))
    return max(c for c in CONCURRENCIES if c <= bound)


def _measurer(model: Path, settings: TransformSettings, **sample: Any) -> Measure:
    """Measures a point: the ``sample`` (calibrate's ``records``, or its ``objects`` and
    ``header``) sent ``1 + PASSES`` times through one local instance set as the point says,
    the first pass warming the server up."""

    def measure(point: TunePoint) -> TunePoint:
        tried = replace(
            settings,
            max_payload_mb=point.max_payload_mb,
            max_concurrent_transforms=point.max_concurrent_transforms,
        )
        variables = point_environment(point)
        if variables:
            tried = replace(tried, environment={**tried.environment, **variables})
        result = calibrate(model, "transform", tried, passes=1 + PASSES, **sample)
        runs = result.runs[1:]
        return replace(
            point,
            rows_per_second=statistics.median(runs),
            requests=result.requests // (1 + PASSES),
            passes=runs,
        )

    return measure


def _rising(
    measure: Measure, line: list[TunePoint], on_point: Callable[[TunePoint], None]
) -> list[TunePoint]:
    """The points of ``line`` in order, those that fit measured, up to the first that is
    clearly slower than the best before it."""
    done: list[TunePoint] = []
    for point in line:
        point = measure(point) if point.fits else point
        on_point(point)
        falls = _falls(point, done)
        done.append(point)
        if falls:
            break
    return done


def _refine(
    measure: Measure,
    swept: list[TunePoint],
    local_cpus: int,
    on_point: Callable[[TunePoint], None],
) -> list[TunePoint]:
    """Stages 2 and 3 after ``swept``: forward batches at its recommended point, then the
    cores as workers x threads at the point recommended so far."""
    pair = recommend(swept)
    if pair is None:
        return swept
    sizes = [b for b in FORWARD_BATCHES if b < pair.forward_records]
    batches = _rising(measure, [replace(pair, max_batch_records=b) for b in sizes], on_point)
    chosen = recommend(swept + batches) or pair
    layouts: list[TunePoint] = []
    for workers in worker_counts(local_cpus):
        point = measure(replace(chosen, workers=workers, threads=local_cpus // workers))
        on_point(point)
        layouts.append(point)
    return swept + batches + layouts


def worker_counts(cpus: int) -> list[int]:
    """The workers to try on ``cpus`` cores, each with an equal share of them: one per core,
    then each power of two that divides the cores, down to one (6 cores: 6, 2, 1); none on
    one core (one worker with its one thread is the default)."""
    if cpus <= 1:
        return []
    return [w for w in range(cpus, 0, -1) if w == cpus or (cpus % w == 0 and w & (w - 1) == 0)]


def point_environment(point: TunePoint) -> dict[str, str]:
    """The container variables that set ``point``'s forward batch, workers and threads."""
    variables = {}
    if point.max_batch_records is not None:
        variables[MAX_BATCH_RECORDS_VAR] = str(point.max_batch_records)
    if point.workers is not None:
        variables[WORKERS_VAR] = str(point.workers)
    if point.threads is not None:
        variables[THREADS_VAR] = str(point.threads)
    return variables


def tune_json(points: list[TunePoint]) -> dict[str, Any]:
    best = recommend(points)
    return {
        "points": [asdict(p) for p in points],
        "recommended": None if best is None else asdict(best),
        "indistinct": indistinct(points),
    }
