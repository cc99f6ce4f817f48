"""What each run does and how long it may take: the engine, the default transform
settings, shards and rounds, the Maps' concurrency, the jobs' and the execution's limits."""

import math
from typing import TYPE_CHECKING

from batchinfer.engines import PIPELINE_ENGINES
from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.limits import MAX_ROUNDS, MIN_SHARD_SIZE, capacity_wait_seconds
from batchinfer.transform.settings import TransformSettings
from batchinfer.units import parse_size
from stacks.config.checks import int_range, require

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig


def check_engine(config: "PipelineConfig", where: str) -> None:
    require(
        config.engine in PIPELINE_ENGINES,
        f"{where}.engine",
        config.engine,
        ", ".join(PIPELINE_ENGINES),
    )


def check_transform(config: "PipelineConfig", where: str) -> None:
    """The default transform settings of a run are valid on their own."""
    try:
        TransformSettings.from_request(config.transform)
    except ValidationError as exc:
        raise ValidationError(f"{where}.transform: {exc}") from None


def check_rounds(config: "PipelineConfig", where: str) -> None:
    """Shard size, rounds, and how many objects are split and shards checked at once."""
    size = parse_size(config.shard_size, field=f"{where}.shard_size")
    require(size >= MIN_SHARD_SIZE, f"{where}.shard_size", config.shard_size, ">= 1MiB")
    int_range(config.max_rounds, 1, MAX_ROUNDS, f"{where}.max_rounds")
    int_range(config.split_concurrency, 1, 1000, f"{where}.split_concurrency")
    int_range(config.verify_concurrency, 1, 1000, f"{where}.verify_concurrency")


def check_job_limits(config: "PipelineConfig", where: str) -> None:
    """The Processing jobs' volume and runtime, and the execution's timeout."""
    int_range(config.processing_volume_gb, 1, 16384, f"{where}.processing_volume_gb")
    int_range(config.processing_max_runtime_hours, 1, 120, f"{where}.processing_max_runtime_hours")
    int_range(config.timeout_hours, 1, 24 * 365, f"{where}.timeout_hours")


def check_run_time(config: "PipelineConfig", where: str) -> None:
    """An execution timeout no shorter than the longest run (:func:`longest_run`), or the
    execution times out while a job it started may still run (and be billed)."""
    seconds, sum_ = longest_run(config)
    require(
        config.timeout_hours * 3600 >= seconds,
        f"{where}.timeout_hours",
        config.timeout_hours,
        f"at least {math.ceil(seconds / 3600)} hours, the longest run: {sum_}; a shorter "
        "execution times out while a job it started may still run",
    )


def longest_run(config: "PipelineConfig") -> tuple[int, str]:
    """The longest a run can take, in seconds, and the sum that gives it: a split job
    (when the stack has them) to its runtime limit; then each of ``max_rounds`` rounds waits
    as long as admission allows and runs its job to the same limit (a transform job has
    none of its own: it is held to the processing job's); before each later round, the
    wait after a job that failed for want of capacity. The time Lambdas take and the
    Retry of SageMaker API errors are left to the margin of whole hours."""
    runtime = config.processing_max_runtime_hours * 3600
    admission = config.admission.max_wait_minutes * 60
    first_wait = config.retry.capacity_wait_seconds
    capacity = sum(capacity_wait_seconds(first_wait, n) for n in range(1, config.max_rounds))
    split = runtime if config.split_jobs else 0
    parts = []
    if split:
        parts.append(f"a split job of {_hours(split)} (processing_max_runtime_hours)")
    parts.append(
        f"{config.max_rounds} rounds (max_rounds) x ({_hours(admission)} admission wait "
        f"(admission.max_wait_minutes {config.admission.max_wait_minutes}) + "
        f"{_hours(runtime)} job (processing_max_runtime_hours))"
    )
    if capacity:
        parts.append(
            f"{_hours(capacity)} of capacity waits (retry.capacity_wait_seconds {first_wait}, "
            f"doubled each round, before rounds 2-{config.max_rounds})"
        )
    seconds = split + config.max_rounds * (admission + runtime) + capacity
    return seconds, f"{' + '.join(parts)} = {_hours(seconds)}"


def _hours(seconds: int) -> str:
    return f"{round(seconds / 3600, 2):g} h"
