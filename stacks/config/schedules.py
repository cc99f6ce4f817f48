"""``schedules``: EventBridge Scheduler schedules that start runs with a fixed input."""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from batchinfer.errors import ValidationError
from stacks.config.checks import as_list, known_keys, require, require_unique
from stacks.config.places import DATA_BUCKET_PLACEHOLDER

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig

_RATE = re.compile(r"rate\(([1-9]\d*) (minute|minutes|hour|hours|day|days)\)")
_CRON = re.compile(r"cron\(([^()]+)\)")
_AT = re.compile(r"at\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\)")
_SCHEDULE_NAME = re.compile(r"[0-9a-zA-Z-_.]{1,64}")


@dataclass(frozen=True)
class ScheduleConfig:
    """An EventBridge Scheduler schedule that starts a run with a fixed input."""

    name: str
    expression: str
    input: Mapping[str, Any]
    timezone: str = "UTC"
    enabled: bool = True


def parse_schedules(raw: Any, where: str) -> tuple[ScheduleConfig, ...]:
    return tuple(_schedule(item, f"{where}[{i}]") for i, item in enumerate(as_list(raw, where)))


def _schedule(raw: Any, where: str) -> ScheduleConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object with name, expression and input")
    values = known_keys(raw, ScheduleConfig, where)
    for key in ("name", "expression", "input"):
        if key not in values:
            raise ValidationError(f"{where}.{key}: required")
    schedule = ScheduleConfig(**values)
    require(
        isinstance(schedule.name, str) and _SCHEDULE_NAME.fullmatch(schedule.name),
        f"{where}.name",
        schedule.name,
        "1-64 letters, digits, '-', '_' or '.'",
    )
    check_schedule_expression(schedule.expression, f"{where}.expression")
    require(
        isinstance(schedule.input, Mapping) and "input" in schedule.input,
        f"{where}.input",
        schedule.input,
        'a request object with at least {"input": "s3://..." or "bucket://NAME/KEY"}',
    )
    require(isinstance(schedule.enabled, bool), f"{where}.enabled", schedule.enabled, "a boolean")
    return schedule


def check_schedule_expression(expression: Any, where: str) -> None:
    """EventBridge Scheduler syntax: ``rate(N unit)``, ``cron(6 fields)`` or ``at(...)``."""
    if not isinstance(expression, str):
        raise ValidationError(f"{where}: {expression!r} is not a string")
    cron = _CRON.fullmatch(expression)
    if cron is not None:
        parts = cron.group(1).split()
        if len(parts) != 6:
            raise ValidationError(
                f"{where}: {expression!r} has {len(parts)} cron fields; EventBridge Scheduler "
                "needs 6 (minutes hours day-of-month month day-of-week year), "
                "e.g. cron(0 2 * * ? *)"
            )
        if "?" not in (parts[2], parts[4]):
            raise ValidationError(
                f"{where}: {expression!r}: one of day-of-month and day-of-week must be '?'"
            )
        return
    if _RATE.fullmatch(expression) is None and _AT.fullmatch(expression) is None:
        raise ValidationError(
            f"{where}: {expression!r} is not a schedule; use rate(N minutes|hours|days), "
            "cron(m h dom mon dow year) or at(yyyy-mm-ddThh:mm:ss)"
        )
    rate = _RATE.fullmatch(expression)
    if rate is not None:
        count, unit = int(rate.group(1)), rate.group(2)
        if (count == 1) != (not unit.endswith("s")):
            raise ValidationError(
                f"{where}: {expression!r}: use a singular unit for 1 and a plural one otherwise"
            )


def check_schedules(config: "PipelineConfig", where: str) -> None:
    """Unique names; each schedule's input and output references resolve."""
    require_unique((s.name for s in config.schedules), f"{where}.schedules")
    for i, schedule in enumerate(config.schedules):
        config.resolve_request(
            schedule.input, DATA_BUCKET_PLACEHOLDER, f"{where}.schedules[{i}].input"
        )
