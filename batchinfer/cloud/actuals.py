"""What a run took, beside what Plan estimated (the RUN item's ``estimate``).

The status table records when a run started and finished, not when each job's instances
ran, so the actual instance-hours are a bound: every instance billed for the run's whole
duration (splitting and checking included, when no instance runs). The cost is that bound
at the estimate's hourly price (the same table, or the request's price), else the table's.
"""

from datetime import UTC, datetime
from typing import Any

from batchinfer.instances.prices import hourly_price
from batchinfer.planning.estimate import SECONDS_PER_HOUR

ACTUAL_KEYS = (
    "finished",
    "duration_seconds",
    "instance_type",
    "instances",
    "instance_hours_at_most",
    "usd_per_hour",
    "cost_usd_at_most",
    "shards",
    "records_in",
    "records_out",
)


def actual(run: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
    """The run's duration (so far, while it runs), instance-hours and cost at most, shards
    and records, as JSON values (None where the item has no value)."""
    settings = run.get("settings") or {}
    estimate = run.get("estimate") or {}
    instance_type = settings.get("instance_type") or estimate.get("instance_type")
    instances = settings.get("instance_count") or estimate.get("instances")
    started, finished = _time(run.get("started_at")), _time(run.get("finished_at"))
    end = finished or now or datetime.now(UTC)
    seconds = None if started is None else max(0.0, (end - started).total_seconds())
    usd_per_hour = _float(estimate.get("usd_per_hour"))
    if usd_per_hour is None and instance_type:
        price = hourly_price(instance_type, _region(run.get("execution_arn")), {})
        usd_per_hour = None if price is None else price.usd_per_hour
    hours = (
        None if seconds is None or not instances else int(instances) * seconds / SECONDS_PER_HOUR
    )
    return {
        "finished": finished is not None,
        "duration_seconds": seconds,
        "instance_type": instance_type,
        "instances": None if instances is None else int(instances),
        "instance_hours_at_most": hours,
        "usd_per_hour": usd_per_hour,
        "cost_usd_at_most": None if hours is None or usd_per_hour is None else hours * usd_per_hour,
        "shards": _int(run.get("shards")),
        "records_in": _int(run.get("records_in")),
        "records_out": _int(run.get("records_out")),
    }


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _region(execution_arn: Any) -> str:
    parts = execution_arn.split(":") if isinstance(execution_arn, str) else []
    return parts[3] if len(parts) > 3 else ""


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
