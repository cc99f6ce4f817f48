"""What each run does and how long it may take: the engine, the default transform
settings, shards and rounds, the Maps' concurrency, the jobs' and the execution's limits."""

from typing import TYPE_CHECKING

from batchinfer.engines import PIPELINE_ENGINES
from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.limits import MAX_ROUNDS, MIN_SHARD_SIZE
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
    """The Processing jobs' volume and runtime; an execution timeout no shorter than the
    jobs of all its rounds."""
    int_range(config.processing_volume_gb, 1, 16384, f"{where}.processing_volume_gb")
    int_range(config.processing_max_runtime_hours, 1, 120, f"{where}.processing_max_runtime_hours")
    int_range(config.timeout_hours, 1, 24 * 365, f"{where}.timeout_hours")
    longest = config.max_rounds * config.processing_max_runtime_hours
    require(
        config.timeout_hours >= longest,
        f"{where}.timeout_hours",
        config.timeout_hours,
        f"at least {where}.max_rounds x {where}.processing_max_runtime_hours = "
        f"{config.max_rounds} x {config.processing_max_runtime_hours} = {longest} hours, or the "
        "execution times out while a job it started may still run",
    )
