"""How long a job would take on its instances, and what it would cost.

Each unit (an input, or a shard of one) is transformed whole by one instance (R3). A
transform job's instances take the next unit as they become free (as the local engine
does); a processing job's are given units by key (ShardedByS3Key, P4). An instance's speed
is the calibrated speed per busy CPU times the CPUs it keeps busy (:func:`busy_cpus`);
every instance is billed until the job's last unit is done.
"""

import heapq
from dataclasses import dataclass
from typing import Any

from batchinfer.engine.processing_engine import shard_by_key
from batchinfer.pipeline.instance_specs import InstanceSpec
from batchinfer.planning.calibrate import Calibration, busy_cpus
from batchinfer.planning.prices import Price
from batchinfer.transform.settings import TransformSettings

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
    busy_cpus: int  # per instance
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
    calibration: Calibration,
    *,
    spec: InstanceSpec,
    settings: TransformSettings,
    engine: str,
    price: Price | None,
) -> Estimate:
    """Seconds per instance for ``units`` on the ``settings``' instances, of ``spec``."""
    busy = busy_cpus(engine, spec.vcpus, settings)
    scale = busy / calibration.busy_cpus
    rows, throughput = calibration.rows_per_second * scale, calibration.bytes_per_second * scale
    by_records = settings.split_type == "Line"
    instance_count = settings.instance_count

    def seconds(unit: Unit) -> float:
        return unit.records / rows if by_records else unit.bytes / throughput

    if engine == "processing":
        seconds_each = [sum(map(seconds, part)) for part in shard_by_key(units, instance_count)]
    else:
        seconds_each = _shared_queue([seconds(u) for u in units], instance_count)
    assumptions = [
        f"a vCPU of {settings.instance_type} is as fast as a CPU of this machine, which "
        f"kept {calibration.busy_cpus} of its {calibration.local_cpus} CPUs busy on the "
        f"sample; an instance keeps {busy} of its {spec.vcpus} vCPUs busy"
        + ("; its GPUs are not counted" if spec.gpus else ""),
        "each input or shard is large enough to keep that many requests in flight",
        "instance start-up and model loading (minutes per job, billed too) are not included",
        "every instance is billed until the job's last unit is done",
    ]
    return Estimate(
        instance_type=settings.instance_type,
        instance_count=instance_count,
        busy_cpus=busy,
        basis="records" if by_records else "bytes",
        rows_per_second=rows,
        bytes_per_second=throughput,
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
