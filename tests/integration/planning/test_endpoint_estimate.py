"""The endpoint engine's plan: requests per shard within the real-time payload limit (C8,
R7), and their time at the stack's concurrency."""

import pytest

from batchinfer.errors import ValidationError
from batchinfer.planning.endpoint_estimate import endpoint_estimate, requests_of
from batchinfer.planning.estimate import Throughput, Unit
from batchinfer.transform.settings import TransformSettings
from batchinfer.units import MIB
from tests.integration.planning.test_plan_cli import CSV, plan_json


def settings(**values: object) -> TransformSettings:
    return TransformSettings.from_request({"split_type": "Line", **values})


def test_multirecord_batches_fill_max_payload_and_singlerecord_sends_each_record_r7():
    unit = Unit("a.csv", 30_000, 13 * MIB)
    assert requests_of(unit, settings(max_payload_mb=6)) == 3
    assert requests_of(unit, settings(max_payload_mb=1)) == 13
    assert requests_of(unit, settings(batch_strategy="SingleRecord")) == 30_000
    assert requests_of(Unit("b.csv", None, 5), settings(batch_strategy="SingleRecord")) is None
    whole = TransformSettings.from_request({"split_type": "None"})
    assert requests_of(unit, whole) == 1
    assert requests_of(Unit("empty.csv", 0, 0), settings()) == 0


def test_a_payload_over_what_an_endpoint_takes_is_refused_c8():
    with pytest.raises(ValidationError, match="at most 6 MB"):
        requests_of(Unit("a.csv", 1, 1), settings(max_payload_mb=7))


def test_time_is_the_records_over_the_measured_speed_times_the_requests_in_flight():
    units = [Unit(f"a.csv#{n}", 2000, 88_000) for n in range(3)]
    measured = Throughput(1000.0, 44_000.0, 1, "a test measurement")
    both = settings(max_concurrent_transforms=2)
    estimate = endpoint_estimate(units, both, concurrency=4, throughput=measured)
    assert estimate.in_flight == 6, "three shards, so three Lambdas, two requests each"
    assert estimate.seconds == pytest.approx(6000 / (1000 * 6))
    assert estimate.requests == 3
    unmeasured = endpoint_estimate(units, both, concurrency=2, throughput=None)
    assert unmeasured.in_flight == 4 and unmeasured.seconds is None


def test_plan_for_the_endpoint_engine_counts_requests_and_prices_no_instances(capsys, example_dir):
    plan = plan_json(
        capsys, example_dir / "input", *CSV, "--model", example_dir / "model",
        "--engine", "endpoint", "--shards", "4", "--endpoint-concurrency", "2",
        "--max-payload-mb", "1", "--sample-records", "1000",
    )  # fmt: skip
    endpoint = plan["endpoint"]
    assert plan["engine"] == "endpoint" and plan["shards"] == 4
    assert endpoint["requests_in_flight"] == 2
    assert endpoint["requests"] == sum(
        max(1, -(-f["bytes"] // 4 // MIB)) for f in plan["files"] * 4
    )
    assert endpoint["seconds"] > 0
    assert plan["estimate"] is None and plan["price"] is None, "the endpoint is paid for already"
    assert "no-price" not in [w["code"] for w in plan["warnings"]]
