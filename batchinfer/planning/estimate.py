"""How long a job would take on its instances, and what it would cost.

Each unit (an input, or a shard of one) is transformed whole by one instance (R3: each input object
goes whole to one instance). A transform job's instances take the next unit as they become free (as
the local engine does); a processing job's are given units by key (ShardedByS3Key, P4: each instance
gets its own disjoint share of the objects). An instance's speed is the measured speed per busy CPU
times the CPUs it keeps busy (:func:`busy_cpus`); every instance is billed until the job's last unit
is done.

:func:`job_estimate` is the one estimate of a job: ``batchinfer plan`` shows it and the
pipeline's Plan step writes it into the run's status item (:meth:`JobEstimate.to_item`).
This module imports no model-serving code, so the pipeline's Lambdas can use it.
"""

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchinfer.engine.key_split import shard_by_key
from batchinfer.instances.prices import Price
from batchinfer.instances.specs import InstanceSpec
from batchinfer.transform.server_limits import execution_parameters
from batchinfer.transform.settings import TransformSettings

SECONDS_PER_HOUR = 3600.0
SIGNIFICANT_DIGITS = 6  # of the numbers kept in a status item


@dataclass(frozen=True)
class Unit:
    """The work of one input or shard: its records (Line, or a Parquet shard's rows; None
    when not counted) and decompressed bytes."""

    name: str
    records: float | None
    bytes: float


@dataclass(frozen=True)
class Throughput:
    """A measured speed: records (None when not counted) and bytes a second while
    ``busy_cpus`` CPUs were busy, and where the figures come from. ``per_instance``: the
    figures are one instance of the job's type, measured on it (``--throughput``), not this
    machine's CPUs to scale by vCPUs."""

    rows_per_second: float | None
    bytes_per_second: float
    busy_cpus: int
    source: str
    per_instance: bool = False


def scales_to(throughput: Throughput, spec: InstanceSpec) -> bool:
    """Whether ``throughput`` says how fast an instance of ``spec`` is: measured on one, or
    measured on CPUs for an instance whose work is on its CPUs (a GPU's speed is nothing a
    CPU's tells)."""
    return throughput.per_instance or not spec.gpus


def busy_cpus(engine: str, cpus: int, settings: TransformSettings) -> int:
    """The CPUs an instance of ``cpus`` keeps busy on a large input: one worker per CPU, fed
    MaxConcurrentTransforms requests at a time (the job's, else what its model server
    answers, R10: the job's batch settings, else the container's, else defaults) by a transform job,
    or one request per worker by a processing job."""
    if engine == "processing":
        return cpus
    answer = execution_parameters(cpus, settings.container_environment({}))
    return max(1, min(cpus, settings.resolve(answer).max_concurrent_transforms))


@dataclass(frozen=True)
class Estimate:
    instance_type: str
    instance_count: int
    busy_cpus: int  # per instance
    basis: str  # "records" (SplitType Line, records counted) or "bytes"
    rows_per_second: float | None  # per instance
    bytes_per_second: float  # per instance
    instance_seconds: list[float]
    price: Price | None
    assumptions: list[str]

    @property
    def job_seconds(self) -> float:
        return max(self.instance_seconds, default=0.0)

    @property
    def instance_hours(self) -> float:
        return self.instance_count * self.job_seconds / SECONDS_PER_HOUR

    @property
    def cost_usd(self) -> float | None:
        return None if self.price is None else self.instance_hours * self.price.usd_per_hour

    def to_json(self) -> dict[str, Any]:
        return {
            "instance_type": self.instance_type,
            "instance_count": self.instance_count,
            "busy_cpus_per_instance": self.busy_cpus,
            "basis": self.basis,
            "rows_per_second_per_instance": self.rows_per_second,
            "bytes_per_second_per_instance": self.bytes_per_second,
            "instance_seconds": self.instance_seconds,
            "job_seconds": self.job_seconds,
            "instance_hours": self.instance_hours,
            "usd_per_hour": None if self.price is None else self.price.usd_per_hour,
            "price_source": None if self.price is None else self.price.source,
            "cost_usd": self.cost_usd,
            "assumptions": self.assumptions,
        }


def estimate(
    units: list[Unit],
    throughput: Throughput,
    *,
    spec: InstanceSpec,
    settings: TransformSettings,
    engine: str,
    price: Price | None,
) -> Estimate:
    """Seconds per instance for ``units`` on the ``settings``' instances, of ``spec``."""
    busy = busy_cpus(engine, spec.vcpus, settings)
    scale = 1.0 if throughput.per_instance else busy / throughput.busy_cpus
    rows = None if throughput.rows_per_second is None else throughput.rows_per_second * scale
    speed = throughput.bytes_per_second * scale
    by_records = (
        (settings.split_type == "Line" or settings.parquet_in)  # records: lines, or rows
        and rows is not None
        and all(u.records is not None for u in units)
    )
    instance_count = settings.instance_count

    def seconds(unit: Unit) -> float:
        if by_records:
            assert rows is not None and unit.records is not None
            return unit.records / rows
        return unit.bytes / speed

    if engine == "processing":
        seconds_each = [sum(map(seconds, part)) for part in shard_by_key(units, instance_count)]
    else:
        seconds_each = _shared_queue([seconds(u) for u in units], instance_count)
    speed_basis = (
        f"one {settings.instance_type} instance is as fast as {throughput.source}"
        if throughput.per_instance
        else f"a vCPU of {settings.instance_type} is as fast as a CPU of the measurement "
        f"({throughput.source}); an instance keeps {busy} of its {spec.vcpus} vCPUs busy"
    )
    assumptions = [
        speed_basis,
        "each input or shard is large enough to keep that many requests in flight",
        "instance start-up and model loading (minutes per job, billed too) are not included",
        "every instance is billed until the job's last unit is done",
    ]
    if not by_records:
        assumptions.append("records take time in proportion to their bytes")
    return Estimate(
        instance_type=settings.instance_type,
        instance_count=instance_count,
        busy_cpus=busy,
        basis="records" if by_records else "bytes",
        rows_per_second=rows,
        bytes_per_second=speed,
        instance_seconds=seconds_each,
        price=price,
        assumptions=assumptions,
    )


def _shared_queue(durations: list[float], instances: int) -> list[float]:
    """Busy seconds per instance when each takes the next unit as soon as it is free."""
    free = [(0.0, i) for i in range(instances)]
    busy = [0.0] * instances
    for duration in durations:
        at, instance = heapq.heappop(free)
        busy[instance] += duration
        heapq.heappush(free, (at + duration, instance))
    return busy


@dataclass(frozen=True)
class JobEstimate:
    """What one job over some inputs would do, and with a throughput how long it would take
    and cost: the counts need no measurement, the duration does."""

    objects: int
    bytes: int
    shards: int
    instance_type: str
    instances: int
    price: Price | None
    duration: Estimate | None
    jobs: int = 1

    @property
    def busy_instances(self) -> int:
        return min(self.instances, self.shards)

    def to_item(self) -> dict[str, Any]:
        """The estimate as a status-table map: DynamoDB numbers (Decimal), absent values
        left out; no per-instance lists, so the item stays small."""
        values: dict[str, Any] = {
            "objects": self.objects,
            "bytes": self.bytes,
            "shards": self.shards,
            "instances": self.instances,
            "jobs": self.jobs,
            "instance_type": self.instance_type,
        }
        if self.price is not None:
            values |= {"usd_per_hour": self.price.usd_per_hour, "price_source": self.price.source}
        if self.duration is not None:
            d = self.duration
            values |= {
                "basis": d.basis,
                "rows_per_second": d.rows_per_second,
                "bytes_per_second": d.bytes_per_second,
                "job_seconds": d.job_seconds,
                "instance_hours": d.instance_hours,
                "cost_usd": d.cost_usd,
            }
        return {key: _number(value) for key, value in values.items() if value is not None}


def _number(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return value


def job_estimate(
    units: Iterable[Unit],
    *,
    objects: int,
    bytes: int,
    shards: int,
    settings: TransformSettings,
    engine: str,
    price: Price | None,
    spec: InstanceSpec | None,
    throughput: Throughput | None,
) -> JobEstimate:
    """The estimate of one job over ``shards`` units of ``objects`` inputs of ``bytes`` in
    all; the duration and cost need ``throughput``, ``spec`` and every unit in ``units``."""
    units = list(units)
    duration = None
    if throughput is not None and spec is not None and scales_to(throughput, spec):
        duration = estimate(
            units, throughput, spec=spec, settings=settings, engine=engine, price=price
        )
    return JobEstimate(
        objects=objects,
        bytes=bytes,
        shards=shards,
        instance_type=settings.instance_type,
        instances=settings.instance_count,
        price=price,
        duration=duration,
    )
