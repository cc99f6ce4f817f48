"""Where and under which names an environment deploys: ``stack_name``, ``job_prefix``,
``account`` and ``region``."""

import re
from typing import TYPE_CHECKING

from batchinfer.pipeline.contract.job_names import MAX_PREFIX_LENGTH, PREFIX_PATTERN
from stacks.config.checks import require

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig

_STACK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,127}")
_ACCOUNT = re.compile(r"\d{12}")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")


def check_deployment(config: "PipelineConfig", where: str) -> None:
    require(_STACK_NAME.fullmatch(config.stack_name), f"{where}.stack_name", config.stack_name)
    require(
        PREFIX_PATTERN.fullmatch(config.job_prefix) and len(config.job_prefix) <= MAX_PREFIX_LENGTH,
        f"{where}.job_prefix",
        config.job_prefix,
        f"1-{MAX_PREFIX_LENGTH} lowercase letters, digits and single hyphens, starting with a "
        "letter (SageMaker ARNs are lowercase, and IAM matches them by this prefix)",
    )
    if config.account is not None:
        require(_ACCOUNT.fullmatch(config.account), f"{where}.account", config.account)
    if config.region is not None:
        require(_REGION.fullmatch(config.region), f"{where}.region", config.region)
