"""Reading an environment from CDK context: :func:`load_config` picks it, :func:`parse_config`
builds each section, :func:`validate_config` checks the whole, section by section."""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from batchinfer.errors import ValidationError
from stacks.config.admission import check_admission, parse_admission
from stacks.config.checks import as_list, known_keys
from stacks.config.deployment import check_deployment
from stacks.config.endpoints import check_endpoints, parse_endpoints
from stacks.config.image import check_image, parse_framework_image, parse_image_build
from stacks.config.model import check_model, check_one_model
from stacks.config.notifications import check_emails, check_event_source
from stacks.config.pipeline import PipelineConfig
from stacks.config.places import parse_places
from stacks.config.retention import check_retention
from stacks.config.retry import check_retry, parse_retry
from stacks.config.runs import (
    check_engine,
    check_job_limits,
    check_rounds,
    check_run_time,
    check_transform,
)
from stacks.config.schedules import check_schedules, parse_schedules
from stacks.config.split_jobs import check_split_jobs
from stacks.config.trigger import check_trigger, parse_s3_trigger
from stacks.config.vpc import parse_vpc

ENVIRONMENTS_KEY = "batchinfer:environments"
DEFAULT_ENV_KEY = "env"


def load_config(context: Mapping[str, Any], env: str | None, base_dir: Path) -> PipelineConfig:
    """The environment ``env`` (default: the context's ``env``) from CDK context."""
    environments = context.get(ENVIRONMENTS_KEY)
    if isinstance(environments, str):  # `-c` values arrive as strings
        environments = json.loads(environments)
    if not isinstance(environments, Mapping) or not environments:
        raise ValidationError(f"cdk.json context: {ENVIRONMENTS_KEY} must map names to objects")
    name = env or context.get(DEFAULT_ENV_KEY)
    if name not in environments:
        raise ValidationError(
            f"env: {name!r} is not a configured environment; known: {', '.join(environments)}"
        )
    return parse_config(str(name), environments[name], base_dir)


def parse_config(name: str, raw: Any, base_dir: Path) -> PipelineConfig:
    """Build and validate one environment; errors name ``environments.<name>.<key>``."""
    where = f"environments.{name}"
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object")
    values = known_keys(raw, PipelineConfig, where, exclude={"name"})
    for key in ("stack_name", "job_prefix"):
        if key not in values:
            raise ValidationError(f"{where}.{key}: required")
    check_one_model(values, where)
    values["model_sources"] = tuple(
        as_list(values.get("model_sources", []), f"{where}.model_sources")
    )
    if "retry" in values:
        values["retry"] = parse_retry(values["retry"], f"{where}.retry")
    if "admission" in values:
        values["admission"] = parse_admission(values["admission"], f"{where}.admission")
    values["schedules"] = parse_schedules(values.get("schedules", []), f"{where}.schedules")
    if values.get("s3_trigger") is not None:
        values["s3_trigger"] = parse_s3_trigger(values["s3_trigger"], f"{where}.s3_trigger")
    if values.get("vpc") is not None:
        values["vpc"] = parse_vpc(values["vpc"], f"{where}.vpc")
    if values.get("framework_image") is not None:
        values["framework_image"] = parse_framework_image(
            values["framework_image"], f"{where}.framework_image"
        )
    if "image_build" in values:
        values["image_build"] = parse_image_build(values["image_build"], f"{where}.image_build")
    for key in ("data_sources", "output_destinations"):
        values[key] = parse_places(values.get(key, []), f"{where}.{key}")
    values["endpoints"] = parse_endpoints(values.get("endpoints", []), f"{where}.endpoints")
    values["notification_emails"] = tuple(
        as_list(values.get("notification_emails", []), f"{where}.notification_emails")
    )
    config = PipelineConfig(name=name, **values)
    validate_config(config, base_dir)
    return config


def validate_config(config: PipelineConfig, base_dir: Path) -> None:
    """Each section's checks, in this order: the first error found is the one reported, naming
    ``environments.<name>.<key>``. A local ``model_data`` lies under ``base_dir``."""
    where = f"environments.{config.name}"
    check_deployment(config, where)
    check_engine(config, where)
    check_endpoints(config, where)
    check_transform(config, where)
    check_image(config, where)
    check_model(config, where, base_dir)
    check_rounds(config, where)
    check_split_jobs(config, where)
    check_job_limits(config, where)
    check_retry(config.retry, f"{where}.retry")
    check_admission(config, f"{where}.admission")
    check_run_time(config, where)
    check_retention(config, where)
    check_event_source(config, where)
    check_schedules(config, where)
    if config.s3_trigger is not None:
        check_trigger(config, config.s3_trigger, f"{where}.s3_trigger")
    check_emails(config, where)
