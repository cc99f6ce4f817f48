"""The estimate Plan writes into a run's status item (``estimate``, a map).

Plan lists the input, so it knows the objects and their bytes; it counts the shards the
split options ask for (a count per object, or one per ``shard_size`` bytes; one per object
with SplitType None) and prices the instances with the table ``batchinfer plan`` uses. A
duration and cost need a measured throughput, which Plan cannot measure: the request's
``estimate`` key carries one (``batchinfer submit --estimate-model`` fills it from a local
calibration), and the job is then estimated by bytes, as records are not counted, except
for Parquet: Plan reads each object's rows from its footer, so a ``rows_per_second``
estimates by rows (each shard taken as an equal part of its object's).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.instances.prices import Price, hourly_price
from batchinfer.instances.specs import instance_spec
from batchinfer.planning.estimate import JobEstimate, Throughput, Unit, job_estimate
from batchinfer.sharding.planner import shard_count
from batchinfer.transform.settings import TransformSettings

ESTIMATE_KEY = "estimate"
# The request's ``estimate``: bytes (and records) a second measured while ``busy_cpus``
# CPUs were busy, and an hourly price that overrides the table's.
REQUIRED = ("bytes_per_second",)
OPTIONAL = ("rows_per_second", "busy_cpus", "usd_per_hour")


@dataclass(frozen=True)
class EstimateRequest:
    throughput: Throughput | None = None
    usd_per_hour: float | None = None

    def to_request(self) -> dict[str, Any]:
        """The request's ``estimate`` value that :func:`estimate_request` reads back."""
        t = self.throughput
        values = (
            {}
            if t is None
            else {
                "bytes_per_second": t.bytes_per_second,
                "rows_per_second": t.rows_per_second,
                "busy_cpus": t.busy_cpus,
            }
        )
        values["usd_per_hour"] = self.usd_per_hour
        return {key: value for key, value in values.items() if value is not None}


def estimate_request(request: Mapping[str, Any]) -> EstimateRequest:
    """The request's ``estimate``, checked; ValidationError names the field at fault."""
    given = request.get(ESTIMATE_KEY)
    if given is None:
        return EstimateRequest()
    if not isinstance(given, Mapping):
        raise ValidationError(
            f'{ESTIMATE_KEY}: expected an object such as {{"bytes_per_second": 1000000}}, '
            f"got {given!r}"
        )
    unknown = sorted(set(given) - {*REQUIRED, *OPTIONAL})
    if unknown:
        raise ValidationError(
            f"{ESTIMATE_KEY}: unknown key {unknown[0]!r}; known keys: "
            f"{', '.join(sorted({*REQUIRED, *OPTIONAL}))}"
        )
    speed = _number(given, "bytes_per_second", positive=True)
    usd = _number(given, "usd_per_hour", positive=False)
    if speed is None:
        if set(given) - {"usd_per_hour"}:
            raise ValidationError(
                f"{ESTIMATE_KEY}.bytes_per_second: required with rows_per_second or "
                "busy_cpus (Plan estimates by bytes: it does not count records)"
            )
        return EstimateRequest(usd_per_hour=usd)
    busy = given.get("busy_cpus", 1)
    if isinstance(busy, bool) or not isinstance(busy, int) or busy < 1:
        raise ValidationError(f"{ESTIMATE_KEY}.busy_cpus: {busy!r} is not an integer >= 1")
    rows = _number(given, "rows_per_second", positive=True)
    source = f"the request's estimate, {busy} CPU(s) busy"
    return EstimateRequest(Throughput(rows, speed, busy, source), usd)


def _number(given: Mapping[str, Any], key: str, *, positive: bool) -> float | None:
    value = given.get(key)
    if value is None:
        return None
    number = -1.0 if isinstance(value, bool) or not isinstance(value, int | float) else value
    if not (number > 0 if positive else number >= 0) or number == float("inf"):
        bound = "above 0" if positive else "0 or more"
        raise ValidationError(f"{ESTIMATE_KEY}.{key}: {value!r} is not a number {bound}")
    return float(number)


class ShardTally:
    """The shards the split options ask of each object Plan lists: counted, and kept as
    equal units (records not counted) only when a throughput needs them, so Plan's memory
    grows with the shards only for a run that asks for a duration."""

    def __init__(self, split: Mapping[str, Any], keep: bool) -> None:
        self.shards = split.get("shards")
        self.shard_size = split.get("shard_size")
        self.keep = keep
        self.count = 0
        self.units: list[Unit] = []

    def add(self, name: str, size: int, rows: int | None = None) -> None:
        """Add the object ``name`` of ``size`` bytes (and ``rows``, for Parquet: read from
        its footer), its records and bytes shared equally by its shards."""
        count = shard_count(size, shards=self.shards, shard_size=self.shard_size)
        self.count += count
        if self.keep:
            each = None if rows is None else rows / count
            self.units += [
                Unit(name if count == 1 else f"{name}#{i:05d}", each, size / count)
                for i in range(count)
            ]


def run_estimate(
    tally: ShardTally,
    *,
    objects: int,
    bytes: int,
    settings: TransformSettings,
    engine: str,
    region: str,
    asked: EstimateRequest,
) -> JobEstimate:
    """The job estimate of a run: counts and the hourly price always; with a throughput
    (and an instance type the specification table holds) the duration and cost."""
    price = (
        hourly_price(settings.instance_type, region, {})
        if asked.usd_per_hour is None
        else Price(asked.usd_per_hour, f"the request's {ESTIMATE_KEY}.usd_per_hour")
    )
    try:
        spec = instance_spec(settings.instance_type)
    except ValidationError:
        spec = None  # counts and price only; batchinfer plan names the missing specification
    return job_estimate(
        tally.units,
        objects=objects,
        bytes=bytes,
        shards=tally.count,
        settings=settings,
        engine=engine,
        price=price,
        spec=spec,
        throughput=asked.throughput,
    )
