"""How long the stack keeps what runs leave (shards, artefacts, run records and logs) and
what its run logs hold."""

import math
from typing import TYPE_CHECKING

from stacks.config.checks import int_range, require

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig

# The retention periods CloudWatch Logs accepts, in days (the order of logs.RetentionDays).
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
    2922, 3288, 3653,
)  # fmt: skip


def check_retention(config: "PipelineConfig", where: str) -> None:
    int_range(config.shard_expiry_days, 1, 3650, f"{where}.shard_expiry_days")
    require(
        config.shard_expiry_days * 24 >= config.timeout_hours,
        f"{where}.shard_expiry_days",
        config.shard_expiry_days,
        f"at least {math.ceil(config.timeout_hours / 24)} days: shard_expiry_days x 24 must be "
        f"at least timeout_hours ({config.timeout_hours}), or a run's shards expire while its "
        "later rounds and its merge still read them",
    )
    int_range(config.artefact_expiry_days, 1, 3650, f"{where}.artefact_expiry_days")
    int_range(config.run_record_days, 1, 3650, f"{where}.run_record_days")
    require(
        config.log_retention_days in LOG_RETENTION_DAYS,
        f"{where}.log_retention_days",
        config.log_retention_days,
        ", ".join(map(str, LOG_RETENTION_DAYS)),
    )
    require(
        isinstance(config.log_execution_data, bool),
        f"{where}.log_execution_data",
        config.log_execution_data,
        "true or false",
    )
