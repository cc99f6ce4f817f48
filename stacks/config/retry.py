"""``retry``: the backoff of the jobs' Retry on SageMaker throttling and quota errors."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from batchinfer.errors import ValidationError
from stacks.config.checks import int_range, known_keys, require


@dataclass(frozen=True)
class RetryConfig:
    """Backoff for SageMaker throttling and quota errors (full jitter on top)."""

    interval_seconds: int = 30
    backoff_rate: float = 2.0
    max_attempts: int = 6
    max_delay_seconds: int = 900


def parse_retry(raw: Any, where: str) -> RetryConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object")
    return RetryConfig(**known_keys(raw, RetryConfig, where))


def check_retry(retry: RetryConfig, where: str) -> None:
    """Ranges Step Functions accepts for a Retry."""
    int_range(retry.interval_seconds, 1, 3600, f"{where}.interval_seconds")
    int_range(retry.max_attempts, 0, 99, f"{where}.max_attempts")
    int_range(retry.max_delay_seconds, 1, 31_622_400, f"{where}.max_delay_seconds")
    require(
        isinstance(retry.backoff_rate, int | float) and 1.0 <= retry.backoff_rate <= 10.0,
        f"{where}.backoff_rate",
        retry.backoff_rate,
        "a number from 1 to 10",
    )
