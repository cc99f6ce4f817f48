"""The PipelineConfig: one deployable environment, its sections typed and validated."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from batchinfer.endpoints.targets import DEFAULT_ENDPOINT_CONCURRENCY, EndpointTarget
from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract import data_places
from batchinfer.pipeline.contract.data_places import DATA, DataPlace
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.layout import INPUT_PREFIX, OUTPUT_PREFIX
from batchinfer.transform.settings import TransformSettings
from batchinfer.uris import is_s3_uri
from stacks.config.admission import AdmissionConfig
from stacks.config.image import FrameworkImageConfig, ImageBuildConfig
from stacks.config.retry import RetryConfig
from stacks.config.schedules import ScheduleConfig
from stacks.config.trigger import S3TriggerConfig
from stacks.config.vpc import VpcConfig
from stacks.framework_images import HANDLER_ENVIRONMENT


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
    engine: str = PipelineEnvironment.engine
    transform: Mapping[str, Any] = field(default_factory=dict)
    model_environment: Mapping[str, str] = field(default_factory=dict)
    shard_size: str = PipelineEnvironment.shard_size
    max_rounds: int = PipelineEnvironment.max_rounds
    split_concurrency: int = 8
    verify_concurrency: int = 16  # shards checked at once by the CountShards Map
    # Objects whose split streams more than this (gzip: compressed size x 5) are split by a
    # Processing job on split_instance_type instead of the Lambda; "off": never (scaling.md).
    split_job_threshold: str | None = "10GiB"
    split_instance_type: str = "ml.m5.xlarge"
    # The largest volume; each job sizes its own from its input.
    processing_volume_gb: int = PipelineEnvironment.processing_volume_gb
    processing_max_runtime_hours: int = PipelineEnvironment.processing_max_runtime_seconds // 3600
    timeout_hours: int = PipelineEnvironment.lease_seconds // 3600  # a lease lives as long
    retry: RetryConfig = field(default_factory=RetryConfig)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    shard_expiry_days: int = 7
    artefact_expiry_days: int = 90
    log_retention_days: int = 90
    # Whether the run logs hold each state's input and output (requests, job requests, the
    # model's environment) besides its events; off unless an environment asks for it.
    log_execution_data: bool = False
    run_record_days: int = PipelineEnvironment.run_record_days
    schedules: tuple[ScheduleConfig, ...] = ()
    s3_trigger: S3TriggerConfig | None = None
    notification_emails: tuple[str, ...] = ()
    event_source: str = PipelineEnvironment.event_source
    retain_data: bool = True
    # An existing image instead of one built from containers/ (then deploying needs no
    # container builder): an ECR image URI with a tag or digest.
    image_uri: str | None = None
    # Or one of AWS's framework inference images, resolved for the region at synth.
    framework_image: FrameworkImageConfig | None = None
    # Otherwise the builds of the image from containers/: with torch, and for GPU types.
    image_build: ImageBuildConfig = field(default_factory=ImageBuildConfig)
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
