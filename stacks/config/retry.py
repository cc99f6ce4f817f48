"""``retry``: the backoff of the jobs' Retry on SageMaker throttling and quota errors, and
the wait before the next round after a job failed for want of capacity."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from stacks.config.checks import int_range, known_keys, require


@dataclass(frozen=True)
class RetryConfig:
    """Backoff for SageMaker throttling and quota errors (full jitter on top); and how long
    a run waits before its next round when a job ended Failed with a CapacityError (no
    instances of the type to be had): ``capacity_wait_seconds`` after the first round,
    doubling each round after."""

    interval_seconds: int = 30
    backoff_rate: float = 2.0
    max_attempts: int = 6
    max_delay_seconds: int = 900
    capacity_wait_seconds: int = PipelineEnvironment.capacity_wait_seconds


def parse_retry(raw: Any, where: str) -> RetryConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object")
    return RetryConfig(**known_keys(raw, RetryConfig, where))


def check_retry(retry: RetryConfig, where: str) -> None:
    """Ranges Step Functions accepts for a Retry."""
    int_range(retry.interval_seconds, 1, 3600, f"{where}.interval_seconds")
    int_range(retry.max_attempts, 0, 99, f"{where}.max_attempts")
    int_range(retry.max_delay_seconds, 1, 31_622_400, f"{where}.max_delay_seconds")
    int_range(retry.capacity_wait_seconds, 0, 24 * 3600, f"{where}.capacity_wait_seconds")
    require(
        isinstance(retry.backoff_rate, int | float) and 1.0 <= retry.backoff_rate <= 10.0,
        f"{where}.backoff_rate",
        retry.backoff_rate,
        "a number from 1 to 10",
    )
