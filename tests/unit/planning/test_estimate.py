"""From a calibration to seconds per instance: the CPUs an instance keeps busy, the shared
queue of a transform job and the key split of a processing job (R3, R9, R10, P4)."""

import pytest

from batchinfer.instances.prices import Price
from batchinfer.instances.specs import instance_spec
from batchinfer.planning.calibrate import Calibration
from batchinfer.planning.estimate import Unit, busy_cpus, estimate
from batchinfer.transform.settings import TransformSettings


@pytest.mark.parametrize(
    ("engine", "cpus", "job", "busy"),
    [
        ("transform", 4, {}, 4),  # one worker per vCPU, the server answers 4 at a time
        ("transform", 96, {}, 16),  # the server caps 16 x 6 MB within 100 MB (R1)
        ("transform", 96, {"max_payload_mb": 10}, 10),
        ("transform", 96, {"max_payload_mb": 0}, 96),
        ("transform", 8, {"max_concurrent_transforms": 3}, 3),  # the job's value wins (R10)
        ("processing", 96, {}, 96),  # one request per worker, in-process
    ],
)
def test_busy_cpus(engine, cpus, job, busy):
    assert busy_cpus(engine, cpus, TransformSettings.from_request(job)) == busy


def _calibration(busy: int = 2) -> Calibration:
    return Calibration("transform", 1000, 100_000, 1.0, 4, busy, {})


def test_a_transform_job_shares_units_from_a_queue_and_bills_every_instance_to_the_end():
    settings = TransformSettings.from_request(
        {"split_type": "Line", "instance_count": 2, "instance_type": "ml.m5.xlarge"}
    )
    units = [Unit("a", 40_000, 0), Unit("b", 10_000, 0), Unit("c", 10_000, 0)]
    result = estimate(
        units, _calibration().throughput, spec=instance_spec("ml.m5.xlarge"), settings=settings,
        engine="transform", price=Price(0.5, "test"),
    )  # fmt: skip
    # 1000 rows/s on 2 busy CPUs: 500 per CPU; an m5.xlarge keeps 4 busy: 2000 rows/s
    assert result.rows_per_second == 2000
    assert result.instance_seconds == [20.0, 10.0]  # a | b then c
    assert result.job_seconds == 20.0
    assert result.instance_hours == pytest.approx(2 * 20 / 3600)
    assert result.cost_usd == pytest.approx(result.instance_hours * 0.5)


def test_a_processing_job_splits_units_by_key_and_split_none_goes_by_bytes():
    settings = TransformSettings.from_request({"instance_count": 2})
    units = [Unit(name, 1, size) for name, size in (("a", 400_000), ("b", 0), ("c", 200_000))]
    result = estimate(
        units, _calibration(busy=4).throughput, spec=instance_spec("ml.m5.xlarge"),
        settings=settings, engine="processing", price=None,
    )  # fmt: skip
    # 100,000 B/s on 4 busy CPUs; an m5.xlarge processing instance keeps its 4 busy
    assert result.basis == "bytes" and result.bytes_per_second == 100_000
    assert result.instance_seconds == [6.0, 0.0]  # a and c on the first instance, b alone
    assert result.cost_usd is None
