"""Typed stack configuration, read from ``cdk.json`` context and validated at synth.

``cdk.json`` holds ``batchinfer:environments`` (one object per environment) and ``env``,
the default environment; ``cdk synth -c env=NAME`` selects another. Every error names the
environment and the key at fault (``environments.prod.schedules[0].expression: ...``).

:class:`PipelineConfig` (:mod:`.pipeline`) is one environment; :mod:`.load` reads it; each
section's dataclass, parser and checks live in a module of its own.
"""

from stacks.config.admission import AdmissionConfig
from stacks.config.image import FrameworkImageConfig
from stacks.config.load import (
    DEFAULT_ENV_KEY,
    ENVIRONMENTS_KEY,
    load_config,
    parse_config,
    validate_config,
)
from stacks.config.pipeline import PipelineConfig
from stacks.config.retry import RetryConfig
from stacks.config.schedules import ScheduleConfig
from stacks.config.trigger import S3TriggerConfig
from stacks.config.vpc import VpcConfig

__all__ = [
    "DEFAULT_ENV_KEY",
    "ENVIRONMENTS_KEY",
    "AdmissionConfig",
    "FrameworkImageConfig",
    "PipelineConfig",
    "RetryConfig",
    "S3TriggerConfig",
    "ScheduleConfig",
    "VpcConfig",
    "load_config",
    "parse_config",
    "validate_config",
]
