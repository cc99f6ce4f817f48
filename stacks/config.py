"""Typed stack configuration, read from ``cdk.json`` context and validated at synth.

``cdk.json`` holds ``batchinfer:environments`` (one object per environment) and ``env``,
the default environment; ``cdk synth -c env=NAME`` selects another. Every error names the
environment and the key at fault (``environments.prod.schedules[0].expression: ...``).
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from batchinfer.endpoints.targets import DEFAULT_ENDPOINT_CONCURRENCY, EndpointTarget
from batchinfer.engines import PIPELINE_ENGINES
from batchinfer.errors import ValidationError
from batchinfer.instances.supported import accepted, check_instance_type, nearest
from batchinfer.pipeline.contract import data_places
from batchinfer.pipeline.contract.data_places import DATA, DataPlace
from batchinfer.pipeline.contract.job_names import MAX_PREFIX_LENGTH, PREFIX_PATTERN
from batchinfer.pipeline.contract.layout import INPUT_PREFIX, OUTPUT_PREFIX
from batchinfer.pipeline.contract.limits import MAX_ROUNDS, MIN_SHARD_SIZE
from batchinfer.pipeline.jobs.run_model import PACKAGE_GROUP, PACKAGE_VERSION
from batchinfer.transform.settings import TransformSettings
from batchinfer.units import parse_size
from batchinfer.uris import is_s3_uri, parse_s3_uri
from stacks.execution_history import HISTORY_LIMIT, history_allowance, longest_history
from stacks.framework_images import FRAMEWORKS, HANDLER_ENVIRONMENT

ENVIRONMENTS_KEY = "batchinfer:environments"
DEFAULT_ENV_KEY = "env"

_STACK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,127}")
_RATE = re.compile(r"rate\(([1-9]\d*) (minute|minutes|hour|hours|day|days)\)")
_CRON = re.compile(r"cron\(([^()]+)\)")
_AT = re.compile(r"at\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\)")
_ACCOUNT = re.compile(r"\d{12}")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")
_SCHEDULE_NAME = re.compile(r"[0-9a-zA-Z-_.]{1,64}")
_PREFIX = re.compile(r"([A-Za-z0-9!_.*'()-]+/)+")
# S3 URL-encodes the keys of its events; the trigger's rule matches the prefix as encoded,
# so it may only hold characters that no encoding changes.
_TRIGGER_PREFIX = re.compile(r"([A-Za-z0-9_.-]+/)+")
_SUBNET = re.compile(r"subnet-[0-9a-f]{8,17}")
_SECURITY_GROUP = re.compile(r"sg-[0-9a-f]{8,17}")
_PLACE_NAME = re.compile(r"[a-z][a-z0-9-]{0,62}")
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_KMS_KEY_ARN = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+")
# Stands for the data bucket's name, which CloudFormation generates, when checking requests.
DATA_BUCKET_PLACEHOLDER = "<data bucket>"
ECR_IMAGE = re.compile(
    r"(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/"
    r"(?P<repository>[a-z0-9][a-z0-9._/-]*)(:[\w.-]{1,128}|@sha256:[a-f0-9]{64})"
)


@dataclass(frozen=True)
class ScheduleConfig:
    """An EventBridge Scheduler schedule that starts a run with a fixed input."""

    name: str
    expression: str
    input: Mapping[str, Any]
    timezone: str = "UTC"
    enabled: bool = True


@dataclass(frozen=True)
class S3TriggerConfig:
    """Start runs for the objects created under the key ``prefix`` of the bucket of data
    source ``source`` (``data``: the stack's data bucket): the arrivals of up to
    ``batch_window_seconds`` are gathered and each folder's become one run, whose ``input``
    is the folder and ``names`` its new objects; ``request`` holds the other request keys."""

    prefix: str
    request: Mapping[str, Any] = field(default_factory=dict)
    source: str = DATA
    batch_window_seconds: int = 60


@dataclass(frozen=True)
class VpcConfig:
    """Private subnets and security groups for the jobs, the model and the Lambdas (for
    accounts that require VPC-only SageMaker). The subnets need the VPC endpoints the
    README lists."""

    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...]


@dataclass(frozen=True)
class FrameworkImageConfig:
    """One of AWS's framework inference images, e.g. ``{"framework": "sklearn", "version":
    "1.2-1"}`` (``py_version`` where the framework has several, e.g. ``py310``)."""

    framework: str
    version: str
    py_version: str | None = None


@dataclass(frozen=True)
class RetryConfig:
    """Backoff for SageMaker throttling and quota errors (full jitter on top)."""

    interval_seconds: int = 30
    backoff_rate: float = 2.0
    max_attempts: int = 6
    max_delay_seconds: int = 900


@dataclass(frozen=True)
class AdmissionConfig:
    """How many instances of each type the stack's runs may hold at once, and how a run
    waits for them. SageMaker's per-account quota is "<type> for transform job usage" (and
    "... for processing job usage"), per region, in Service Quotas; new accounts often
    have 0 for most types, so the default budget is small (docs/scaling.md)."""

    instance_budget: Mapping[str, int] = field(default_factory=dict)
    default_budget: int = 2  # for types not in instance_budget
    poll_seconds: int = 60  # the Wait between two tries of a waiting run
    max_wait_minutes: int = 360  # a run waiting longer for one job fails (InstancesUnavailable)


@dataclass(frozen=True)
class PipelineConfig:
    """One deployable environment of the pipeline."""

    name: str
    stack_name: str
    job_prefix: str
    # The default model of a run, exactly one of: model data (s3:// or a local .tar.gz), a
    # model package (version or group ARN; each run gets a model of its own), an existing
    # model's name.
    model_data: str | None = None
    model_package_arn: str | None = None
    model_name: str | None = None
    # s3:// prefixes the jobs may read model data from (for packages and per-run model_data).
    model_sources: tuple[str, ...] = ()
    account: str | None = None
    region: str | None = None
    engine: str = "transform"
    transform: Mapping[str, Any] = field(default_factory=dict)
    model_environment: Mapping[str, str] = field(default_factory=dict)
    shard_size: str = "64MiB"
    max_rounds: int = 3
    split_concurrency: int = 8
    verify_concurrency: int = 16  # shards checked at once by the CountShards Map
    # Objects whose split streams more than this (gzip: compressed size x 5) are split by a
    # Processing job on split_instance_type instead of the Lambda; "off": never (scaling.md).
    split_job_threshold: str | None = "10GiB"
    split_instance_type: str = "ml.m5.xlarge"
    processing_volume_gb: int = 30  # the largest volume; each job sizes its own from its input
    processing_max_runtime_hours: int = 24
    timeout_hours: int = 48
    retry: RetryConfig = field(default_factory=RetryConfig)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    shard_expiry_days: int = 7
    artefact_expiry_days: int = 90
    log_retention_days: int = 90
    run_record_days: int = 365
    schedules: tuple[ScheduleConfig, ...] = ()
    s3_trigger: S3TriggerConfig | None = None
    notification_emails: tuple[str, ...] = ()
    event_source: str = "batchinfer"
    retain_data: bool = True
    # An existing image instead of one built from containers/ (then deploying needs no
    # container builder): an ECR image URI with a tag or digest.
    image_uri: str | None = None
    # Or one of AWS's framework inference images, resolved for the region at synth.
    framework_image: FrameworkImageConfig | None = None
    vpc: VpcConfig | None = None
    # Existing buckets (and prefixes) runs may read inputs from / write outputs to.
    data_sources: tuple[DataPlace, ...] = ()
    output_destinations: tuple[DataPlace, ...] = ()
    # Existing real-time endpoints runs of the endpoint engine may name (the first is the
    # default), and how many shards are scored at once (the Map's MaxConcurrency).
    endpoints: tuple[EndpointTarget, ...] = ()
    endpoint_concurrency: int = DEFAULT_ENDPOINT_CONCURRENCY

    @property
    def settings(self) -> TransformSettings:
        """The stack's default transform settings (validated in :func:`parse_config`)."""
        return TransformSettings.from_request(self.transform)

    @property
    def split_jobs(self) -> bool:
        """Whether large objects go to split jobs: a threshold is set and the image is
        batchinfer's (a framework image has no ``batchinfer split``)."""
        return self.split_job_threshold not in (None, "off") and self.framework_image is None

    @property
    def is_local_model(self) -> bool:
        return self.model_data is not None and not is_s3_uri(self.model_data)

    @property
    def model_source_list(self) -> list[str]:
        """Where the jobs may read model data: ``model_sources`` and the S3 ``model_data``."""
        own = [self.model_data] if self.model_data and is_s3_uri(self.model_data) else []
        return [*self.model_sources, *own]

    @property
    def container_environment(self) -> dict[str, str]:
        """The model's environment: ``model_environment`` over, with a framework image,
        the variables that point its container at ``code/inference.py``."""
        handler = HANDLER_ENVIRONMENT if self.framework_image is not None else {}
        return {**handler, **self.model_environment}

    def input_places(self, data_bucket: str) -> tuple[DataPlace, ...]:
        return data_places.with_data_bucket(INPUT_PREFIX, data_bucket, self.data_sources)

    def output_places(self, data_bucket: str) -> tuple[DataPlace, ...]:
        return data_places.with_data_bucket(OUTPUT_PREFIX, data_bucket, self.output_destinations)

    def resolve_request(
        self, request: Mapping[str, Any], data_bucket: str, where: str
    ) -> dict[str, Any]:
        """``request`` with its ``input`` and ``output`` references (``bucket://NAME/KEY``)
        resolved to ``s3://`` URIs inside the places runs may use."""
        resolved = dict(request)
        for key, places in (
            ("input", self.input_places(data_bucket)),
            ("output", self.output_places(data_bucket)),
        ):
            if key in resolved:
                value = resolved[key]
                if not isinstance(value, str):
                    raise ValidationError(f"{where}.{key}: {value!r} is not a URI")
                try:
                    resolved[key] = data_places.resolve(value, f"{where}.{key}", places)
                except ValidationError as exc:
                    raise ValidationError(
                        f"{exc}; name the stack's data bucket as bucket://{DATA}/KEY and a "
                        "configured bucket as bucket://NAME/KEY"
                    ) from None
        return resolved


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
    values = _known_keys(raw, PipelineConfig, where, exclude={"name"})
    for key in ("stack_name", "job_prefix"):
        if key not in values:
            raise ValidationError(f"{where}.{key}: required")
    models = [key for key in MODEL_CONFIG_KEYS if values.get(key) is not None]
    if len(models) != 1:
        raise ValidationError(
            f"{where}: give exactly one of {', '.join(MODEL_CONFIG_KEYS)}"
            + (f" (got {', '.join(models)})" if models else "")
        )
    values["model_sources"] = tuple(
        _list(values.get("model_sources", []), f"{where}.model_sources")
    )
    if "retry" in values:
        values["retry"] = _retry(values["retry"], f"{where}.retry")
    if "admission" in values:
        values["admission"] = _admission(values["admission"], f"{where}.admission")
    values["schedules"] = tuple(
        _schedule(item, f"{where}.schedules[{i}]")
        for i, item in enumerate(_list(values.get("schedules", []), f"{where}.schedules"))
    )
    if values.get("s3_trigger") is not None:
        values["s3_trigger"] = _s3_trigger(values["s3_trigger"], f"{where}.s3_trigger")
    if values.get("vpc") is not None:
        values["vpc"] = _vpc(values["vpc"], f"{where}.vpc")
    if values.get("framework_image") is not None:
        values["framework_image"] = _framework_image(
            values["framework_image"], f"{where}.framework_image"
        )
    for key in ("data_sources", "output_destinations"):
        values[key] = _places(values.get(key, []), f"{where}.{key}")
    values["endpoints"] = tuple(
        EndpointTarget.from_json(item, f"{where}.endpoints[{i}]")
        for i, item in enumerate(_list(values.get("endpoints", []), f"{where}.endpoints"))
    )
    values["notification_emails"] = tuple(
        _list(values.get("notification_emails", []), f"{where}.notification_emails")
    )
    config = PipelineConfig(name=name, **values)
    _validate(config, where, base_dir)
    return config


def _validate(config: PipelineConfig, where: str, base_dir: Path) -> None:
    _require(_STACK_NAME.fullmatch(config.stack_name), f"{where}.stack_name", config.stack_name)
    _require(
        PREFIX_PATTERN.fullmatch(config.job_prefix) and len(config.job_prefix) <= MAX_PREFIX_LENGTH,
        f"{where}.job_prefix",
        config.job_prefix,
        f"1-{MAX_PREFIX_LENGTH} lowercase letters, digits and single hyphens, starting with a "
        "letter (SageMaker ARNs are lowercase, and IAM matches them by this prefix)",
    )
    if config.account is not None:
        _require(_ACCOUNT.fullmatch(config.account), f"{where}.account", config.account)
    if config.region is not None:
        _require(_REGION.fullmatch(config.region), f"{where}.region", config.region)
    _require(
        config.engine in PIPELINE_ENGINES,
        f"{where}.engine",
        config.engine,
        ", ".join(PIPELINE_ENGINES),
    )
    names = [e.name for e in config.endpoints]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    _require(not duplicates, f"{where}.endpoints", duplicates, "unique names")
    _require(
        config.engine != "endpoint" or config.endpoints,
        f"{where}.endpoints",
        [],
        "at least one endpoint with engine endpoint",
    )
    _int_range(config.endpoint_concurrency, 1, 1000, f"{where}.endpoint_concurrency")
    if config.image_uri is not None:
        _require(
            isinstance(config.image_uri, str) and ECR_IMAGE.fullmatch(config.image_uri),
            f"{where}.image_uri",
            config.image_uri,
            "an ECR image URI with a tag or digest, "
            "<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>",
        )
    if config.framework_image is not None:
        _check_framework_image(config, where)
    try:
        TransformSettings.from_request(config.transform)
    except ValidationError as exc:
        raise ValidationError(f"{where}.transform: {exc}") from None
    _check_model(config, where, base_dir)
    size = parse_size(config.shard_size, field=f"{where}.shard_size")
    _require(size >= MIN_SHARD_SIZE, f"{where}.shard_size", config.shard_size, ">= 1MiB")
    _int_range(config.max_rounds, 1, MAX_ROUNDS, f"{where}.max_rounds")
    _int_range(config.split_concurrency, 1, 1000, f"{where}.split_concurrency")
    _int_range(config.verify_concurrency, 1, 1000, f"{where}.verify_concurrency")
    _check_split_jobs(config, where)
    _int_range(config.processing_volume_gb, 1, 16384, f"{where}.processing_volume_gb")
    _int_range(config.processing_max_runtime_hours, 1, 120, f"{where}.processing_max_runtime_hours")
    _int_range(config.timeout_hours, 1, 24 * 365, f"{where}.timeout_hours")
    longest = config.max_rounds * config.processing_max_runtime_hours
    _require(
        config.timeout_hours >= longest,
        f"{where}.timeout_hours",
        config.timeout_hours,
        f"at least {where}.max_rounds x {where}.processing_max_runtime_hours = "
        f"{config.max_rounds} x {config.processing_max_runtime_hours} = {longest} hours, or the "
        "execution times out while a job it started may still run",
    )
    _int_range(config.shard_expiry_days, 1, 3650, f"{where}.shard_expiry_days")
    _int_range(config.artefact_expiry_days, 1, 3650, f"{where}.artefact_expiry_days")
    _int_range(config.run_record_days, 1, 3650, f"{where}.run_record_days")
    _require(
        config.log_retention_days in LOG_RETENTION_DAYS,
        f"{where}.log_retention_days",
        config.log_retention_days,
        ", ".join(map(str, LOG_RETENTION_DAYS)),
    )
    retry = config.retry
    _int_range(retry.interval_seconds, 1, 3600, f"{where}.retry.interval_seconds")
    _int_range(retry.max_attempts, 0, 99, f"{where}.retry.max_attempts")
    _int_range(retry.max_delay_seconds, 1, 31_622_400, f"{where}.retry.max_delay_seconds")
    _require(
        isinstance(retry.backoff_rate, int | float) and 1.0 <= retry.backoff_rate <= 10.0,
        f"{where}.retry.backoff_rate",
        retry.backoff_rate,
        "a number from 1 to 10",
    )
    _check_admission(config, f"{where}.admission")
    _require(
        re.fullmatch(r"[a-z][a-z0-9.-]{0,63}", config.event_source) is not None
        and not config.event_source.startswith("aws."),
        f"{where}.event_source",
        config.event_source,
        "lowercase letters, digits, dots and hyphens, not starting with 'aws.'",
    )
    names = [s.name for s in config.schedules]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    _require(not duplicates, f"{where}.schedules", duplicates, "unique names")
    for i, schedule in enumerate(config.schedules):
        config.resolve_request(
            schedule.input, DATA_BUCKET_PLACEHOLDER, f"{where}.schedules[{i}].input"
        )
    if config.s3_trigger is not None:
        _check_trigger(config, config.s3_trigger, f"{where}.s3_trigger")
    for email in config.notification_emails:
        _require(
            isinstance(email, str) and re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", email),
            f"{where}.notification_emails",
            email,
            "e-mail addresses",
        )


MODEL_CONFIG_KEYS = ("model_data", "model_package_arn", "model_name")
_MODEL_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")


def _check_model(config: PipelineConfig, where: str, base_dir: Path) -> None:
    if config.model_data is not None and is_s3_uri(config.model_data):
        parse_s3_uri(config.model_data, field=f"{where}.model_data")
    elif config.model_data is not None:
        _require(
            (base_dir / config.model_data).is_file() and config.model_data.endswith(".tar.gz"),
            f"{where}.model_data",
            config.model_data,
            "an s3:// URI or the path of an existing model.tar.gz (relative to cdk.json)",
        )
    if config.model_package_arn is not None:
        arn = config.model_package_arn
        _require(
            isinstance(arn, str)
            and (PACKAGE_VERSION.fullmatch(arn) or PACKAGE_GROUP.fullmatch(arn)),
            f"{where}.model_package_arn",
            arn,
            "a model package version ARN (...:model-package/<group>/<version>) or group ARN "
            "(...:model-package-group/<group>)",
        )
        _require(
            config.model_sources,
            f"{where}.model_sources",
            [],
            "the s3:// prefixes the package versions' model data lie under (the jobs read "
            "them), e.g. s3://sagemaker-<region>-<account>/",
        )
    if config.model_name is not None:
        _require(
            isinstance(config.model_name, str) and _MODEL_NAME.fullmatch(config.model_name),
            f"{where}.model_name",
            config.model_name,
            "the name of an existing SageMaker model",
        )
        _require(
            config.engine == "transform",
            f"{where}.engine",
            config.engine,
            "transform with model_name (processing jobs load model data, which an existing "
            "model does not share)",
        )
    for number, source in enumerate(config.model_sources):
        at = f"{where}.model_sources[{number}]"
        _require(isinstance(source, str) and is_s3_uri(source), at, source, "an s3:// prefix")
        parse_s3_uri(source, field=at)


# The retention periods CloudWatch Logs accepts, in days (the order of logs.RetentionDays).
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
    2922, 3288, 3653,
)  # fmt: skip


def _schedule(raw: Any, where: str) -> ScheduleConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object with name, expression and input")
    values = _known_keys(raw, ScheduleConfig, where)
    for key in ("name", "expression", "input"):
        if key not in values:
            raise ValidationError(f"{where}.{key}: required")
    schedule = ScheduleConfig(**values)
    _require(
        isinstance(schedule.name, str) and _SCHEDULE_NAME.fullmatch(schedule.name),
        f"{where}.name",
        schedule.name,
        "1-64 letters, digits, '-', '_' or '.'",
    )
    check_schedule_expression(schedule.expression, f"{where}.expression")
    _require(
        isinstance(schedule.input, Mapping) and "input" in schedule.input,
        f"{where}.input",
        schedule.input,
        'a request object with at least {"input": "s3://..." or "bucket://NAME/KEY"}',
    )
    _require(isinstance(schedule.enabled, bool), f"{where}.enabled", schedule.enabled, "a boolean")
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


def _check_split_jobs(config: PipelineConfig, where: str) -> None:
    """Split jobs run batchinfer's image: a framework image has no ``batchinfer split``."""
    if config.split_job_threshold in (None, "off"):
        return
    field_name = f"{where}.split_job_threshold"
    if not isinstance(config.split_job_threshold, str):
        raise ValidationError(f"{field_name}: {config.split_job_threshold!r} is not a size")
    parse_size(config.split_job_threshold, field=field_name)
    try:
        check_instance_type(config.split_instance_type, "processing")
    except ValidationError as exc:
        raise ValidationError(f"{where}.split_instance_type: {exc}") from None


def _framework_image(raw: Any, where: str) -> FrameworkImageConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object with framework and version")
    values = _known_keys(raw, FrameworkImageConfig, where)
    for key in ("framework", "version"):
        if not isinstance(values.get(key), str):
            raise ValidationError(f"{where}.{key}: required, a string")
    image = FrameworkImageConfig(**values)
    _require(
        image.framework in FRAMEWORKS, f"{where}.framework", image.framework, ", ".join(FRAMEWORKS)
    )
    return image


def _check_framework_image(config: PipelineConfig, where: str) -> None:
    """A framework image needs a pinned region (its registry differs per region), no
    ``image_uri`` beside it, and the transform engine."""
    if config.image_uri is not None:
        raise ValidationError(f"{where}: give image_uri or framework_image, not both")
    _require(
        config.region is not None,
        f"{where}.region",
        None,
        "a region: framework images are resolved for it at synth",
    )
    _require(
        config.engine == "transform",
        f"{where}.engine",
        config.engine,
        "transform with framework_image (processing jobs need batchinfer's image)",
    )


def _vpc(raw: Any, where: str) -> VpcConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object with subnet_ids and security_group_ids")
    values = _known_keys(raw, VpcConfig, where)
    for key, pattern, example in (
        ("subnet_ids", _SUBNET, "subnet-0123456789abcdef0"),
        ("security_group_ids", _SECURITY_GROUP, "sg-0123456789abcdef0"),
    ):
        ids = _list(values.get(key, []), f"{where}.{key}")
        _require(
            ids and all(isinstance(i, str) and pattern.fullmatch(i) for i in ids),
            f"{where}.{key}",
            ids,
            f"a non-empty list of ids such as {example}",
        )
        values[key] = tuple(ids)
    return VpcConfig(**values)


# The request keys the S3 trigger fills in itself for each run.
TRIGGER_SETS = frozenset({"input", "names", "run_id"})


def _s3_trigger(raw: Any, where: str) -> S3TriggerConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object with prefix and request")
    values = _known_keys(raw, S3TriggerConfig, where)
    if "prefix" not in values:
        raise ValidationError(f"{where}.prefix: required")
    trigger = S3TriggerConfig(**values)
    _require(
        isinstance(trigger.prefix, str) and _TRIGGER_PREFIX.fullmatch(trigger.prefix),
        f"{where}.prefix",
        trigger.prefix,
        "a key prefix ending with '/' of letters, digits, '_', '.' and '-' (S3 URL-encodes "
        "other characters in its events' keys, where the rule would not find the prefix), "
        "e.g. input/arrivals/",
    )
    _require(
        isinstance(trigger.request, Mapping) and not set(trigger.request) & TRIGGER_SETS,
        f"{where}.request",
        trigger.request,
        "an object of request keys without 'input', 'names' or 'run_id' (the trigger sets "
        "the arrivals' folder, their names and a run id per run)",
    )
    window = trigger.batch_window_seconds
    _require(
        isinstance(window, int) and not isinstance(window, bool) and 1 <= window <= 300,
        f"{where}.batch_window_seconds",
        window,
        "an integer 1..300 (the event source mapping's MaximumBatchingWindowInSeconds)",
    )
    return trigger


def _check_trigger(config: PipelineConfig, trigger: S3TriggerConfig, where: str) -> None:
    """The trigger watches a prefix inside one of the input places; its request's output
    reference resolves."""
    places = {p.name: p for p in config.input_places(DATA_BUCKET_PLACEHOLDER)}
    _require(trigger.source in places, f"{where}.source", trigger.source, ", ".join(places))
    place = places[trigger.source]
    _require(
        trigger.prefix.startswith(place.prefix),
        f"{where}.prefix",
        trigger.prefix,
        f"a key prefix under {place.prefix!r}, the prefix of {trigger.source!r}",
    )
    config.resolve_request(trigger.request, DATA_BUCKET_PLACEHOLDER, f"{where}.request")


def _places(raw: Any, where: str) -> tuple[DataPlace, ...]:
    """Existing buckets: ``name`` (used in references), ``bucket``, optional ``prefix`` and
    the ARN of the customer managed key the bucket encrypts with."""
    places = []
    for i, item in enumerate(_list(raw, where)):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise ValidationError(f"{at}: expected an object with name and bucket")
        values = _known_keys(item, DataPlace, at)
        for key in ("name", "bucket"):
            if key not in values:
                raise ValidationError(f"{at}.{key}: required")
        place = DataPlace(**values)
        _require(
            isinstance(place.name, str)
            and _PLACE_NAME.fullmatch(place.name)
            and place.name != DATA,
            f"{at}.name",
            place.name,
            f"lowercase letters, digits and hyphens, starting with a letter; not {DATA!r} "
            "(the stack's data bucket)",
        )
        _require(
            isinstance(place.bucket, str) and _BUCKET.fullmatch(place.bucket),
            f"{at}.bucket",
            place.bucket,
            "an S3 bucket name",
        )
        _require(
            place.prefix == ""
            or (isinstance(place.prefix, str) and _PREFIX.fullmatch(place.prefix)),
            f"{at}.prefix",
            place.prefix,
            "empty (the whole bucket) or a key prefix ending with '/'",
        )
        _require(
            place.kms_key_arn == ""
            or (isinstance(place.kms_key_arn, str) and _KMS_KEY_ARN.fullmatch(place.kms_key_arn)),
            f"{at}.kms_key_arn",
            place.kms_key_arn,
            "the ARN of a KMS key, arn:aws:kms:<region>:<account>:key/<id>",
        )
        places.append(place)
    names = [p.name for p in places]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    _require(not duplicates, where, duplicates, "unique names")
    return tuple(places)


def _retry(raw: Any, where: str) -> RetryConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object")
    return RetryConfig(**_known_keys(raw, RetryConfig, where))


def _admission(raw: Any, where: str) -> AdmissionConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object")
    values = _known_keys(raw, AdmissionConfig, where)
    budget = values.get("instance_budget", {})
    if not isinstance(budget, Mapping):
        raise ValidationError(f"{where}.instance_budget: expected an object")
    return AdmissionConfig(**values)


def _check_admission(config: PipelineConfig, where: str) -> None:
    """Budgets of known instance types; a Wait loop whose longest run stays inside the
    execution history (stacks/execution_history.py)."""
    admission = config.admission
    known = set(accepted("transform")) | set(accepted("processing"))
    for instance_type, budget in admission.instance_budget.items():
        _require(
            instance_type in known,
            f"{where}.instance_budget",
            instance_type,
            f"SageMaker job instance types, e.g. {', '.join(nearest(instance_type, known))}",
        )
        _int_range(budget, 1, 10_000, f"{where}.instance_budget.{instance_type}")
    _int_range(admission.default_budget, 1, 10_000, f"{where}.default_budget")
    settings = config.settings
    budget = admission.instance_budget.get(settings.instance_type, admission.default_budget)
    _require(
        settings.instance_count <= budget,
        f"{where}.instance_budget",
        dict(admission.instance_budget),
        f"a budget of at least {settings.instance_count} {settings.instance_type} (the "
        f"default transform.instance_count of a run), or no run could ever start",
    )
    _int_range(admission.poll_seconds, 1, 3600, f"{where}.poll_seconds")
    _int_range(admission.max_wait_minutes, 1, 7 * 24 * 60, f"{where}.max_wait_minutes")
    events = longest_history(
        max_rounds=config.max_rounds,
        retry_attempts=config.retry.max_attempts,
        max_wait_seconds=admission.max_wait_minutes * 60,
        poll_seconds=admission.poll_seconds,
    )
    allowed = history_allowance()
    _require(
        events <= allowed,
        f"{where}.poll_seconds",
        admission.poll_seconds,
        f"a wait of {admission.max_wait_minutes} minutes at this interval over "
        f"{config.max_rounds} rounds can write {events:,} history events, more than the "
        f"{allowed:,} allowed of a Standard execution's {HISTORY_LIMIT:,}; poll less often, "
        "or lower max_wait_minutes or max_rounds",
    )


def _known_keys(
    raw: Mapping[str, Any], cls: type, where: str, exclude: frozenset[str] | set[str] = frozenset()
) -> dict[str, Any]:
    known = {f.name for f in fields(cls)} - set(exclude)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValidationError(
            f"{where}: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(known))}"
        )
    return dict(raw)


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValidationError(f"{where}: expected a list, got {value!r}")
    return value


def _int_range(value: Any, low: int, high: int, where: str) -> None:
    _require(
        isinstance(value, int) and not isinstance(value, bool) and low <= value <= high,
        where,
        value,
        f"an integer {low}..{high}",
    )


def _require(ok: Any, where: str, value: Any, allowed: str = "") -> None:
    if not ok:
        raise ValidationError(
            f"{where}: {value!r} is not allowed" + (f"; allowed: {allowed}" if allowed else "")
        )
