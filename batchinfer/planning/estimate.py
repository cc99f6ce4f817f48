"""How long a job would take on its instances, and what it would cost.

Each unit (an input, or a shard of one) is transformed whole by one instance (R3). A
transform job's instances take the next unit as they become free (as the local engine
does); a processing job's are given units by key (ShardedByS3Key, P4). An instance's speed
is the calibrated speed of this machine scaled by the ratio of vCPUs; every instance is
billed until the job's last unit is done.
"""

import heapq
from dataclasses import dataclass
from typing import Any

from batchinfer.engine.processing_engine import shard_by_key
from batchinfer.pipeline.instance_specs import InstanceSpec
from batchinfer.planning.calibrate import Calibration
from batchinfer.planning.prices import Price

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class Unit:
    """The work of one input or shard: its records (Line) and decompressed bytes."""

    name: str
    records: float
    bytes: float


@dataclass(frozen=True)
class Estimate:
    instance_type: str
    instance_count: int
    basis: str  # "records" (SplitType Line) or "bytes" (None: objects differ in size)
    rows_per_second: float  # per instance
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
    calibration: Calibration,
    *,
    instance_type: str,
    spec: InstanceSpec,
    instance_count: int,
    engine: str,
    by_records: bool,
    price: Price | None,
) -> Estimate:
    """Seconds per instance for ``units`` on ``instance_count`` instances of ``spec``."""
    scale = spec.vcpus / calibration.local_cpus
    rows, throughput = calibration.rows_per_second * scale, calibration.bytes_per_second * scale

    def seconds(unit: Unit) -> float:
        return unit.records / rows if by_records else unit.bytes / throughput

    if engine == "processing":
        busy = [sum(map(seconds, part)) for part in shard_by_key(units, instance_count)]
    else:
        busy = _shared_queue([seconds(u) for u in units], instance_count)
    assumptions = [
        f"an instance works at this machine's measured speed x {spec.vcpus} vCPUs / "
        f"{calibration.local_cpus} local CPUs ({scale:.3g}); "
        + ("GPUs are not used by this estimate" if spec.gpus else "same per-core speed"),
        "instance start-up and model loading (minutes per job, billed too) are not included",
        "every instance is billed until the job's last unit is done",
    ]
    return Estimate(
        instance_type=instance_type,
        instance_count=instance_count,
        basis="records" if by_records else "bytes",
        rows_per_second=rows,
        bytes_per_second=throughput,
        instance_seconds=busy,
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
