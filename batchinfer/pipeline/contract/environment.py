"""The settings the stack hands to the pipeline's Lambdas as environment variables.

Each field has its type here and is converted once: to its variable's text by
:meth:`PipelineEnvironment.to_variables` (the stack) and back by
:meth:`PipelineEnvironment.from_variables` (each Lambda). The defaults here are the stack
configuration's defaults too (``stacks/config/pipeline.py`` takes them from this class).
"""

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from batchinfer.endpoints.targets import EndpointTarget, targets_from_json, targets_to_json
from batchinfer.errors import BatchInferError
from batchinfer.pipeline.contract import data_places
from batchinfer.pipeline.contract.data_places import DataPlace, with_data_bucket
from batchinfer.pipeline.contract.layout import INPUT_PREFIX, OUTPUT_PREFIX
from batchinfer.uris import parse_s3_uri

_PREFIX = "BATCHINFER_"


@dataclass(frozen=True)
class _Codec:
    """How a field's value is written as its variable's text, and read back."""

    encode: Callable[[Any], str]
    decode: Callable[[str], Any]


_TEXT = _Codec(str, str)
_NUMBER = _Codec(str, int)
_NUMBER_OR_NONE = _Codec(lambda v: "" if v is None else str(v), lambda s: int(s) if s else None)
_JSON_OBJECT = _Codec(lambda v: json.dumps(v, sort_keys=True), json.loads)
_JSON_LIST = _Codec(lambda v: json.dumps(list(v)), lambda s: tuple(json.loads(s)))
_COMMA_LIST = _Codec(",".join, lambda s: tuple(s.split(",")) if s else ())
_PLACES = _Codec(data_places.to_json, data_places.from_json)
_ENDPOINTS = _Codec(targets_to_json, targets_from_json)


def _setting(default: Any, codec: _Codec) -> Any:
    return field(default=default, metadata={"codec": codec})


_JSON_OBJECT_FIELD = {"codec": _JSON_OBJECT}


@dataclass(frozen=True)
class PipelineEnvironment:
    """What every pipeline Lambda knows about its stack."""

    table_name: str
    data_bucket: str
    job_prefix: str
    engine: str = "transform"
    transform_defaults: dict[str, Any] = field(default_factory=dict, metadata=_JSON_OBJECT_FIELD)
    model_environment: dict[str, str] = field(default_factory=dict, metadata=_JSON_OBJECT_FIELD)
    shard_size: str = "64MiB"
    # Bytes a split may stream (gzip: compressed size x GZIP_EXPANSION) before the object
    # goes to a split job instead of the SplitObject Lambda; None: never (split_job.py).
    split_job_threshold: int | None = _setting(None, _NUMBER_OR_NONE)
    # The split jobs' instance type, whose budget their leases draw on ("": no split jobs).
    split_instance_type: str = ""
    max_rounds: int = _setting(3, _NUMBER)
    model_name: str = ""
    model_data_url: str = ""
    image_uri: str = ""
    sagemaker_role_arn: str = ""
    kms_key_arn: str = ""
    processing_volume_gb: int = _setting(30, _NUMBER)
    processing_max_runtime_seconds: int = _setting(24 * 3600, _NUMBER)
    topic_arn: str = ""
    event_bus_name: str = ""
    event_source: str = "batchinfer"
    run_record_days: int = _setting(365, _NUMBER)
    # Empty without a VPC: the processing jobs' VpcConfig.
    subnet_ids: tuple[str, ...] = _setting((), _COMMA_LIST)
    security_group_ids: tuple[str, ...] = _setting((), _COMMA_LIST)
    # The configured existing buckets.
    data_sources: tuple[DataPlace, ...] = _setting((), _PLACES)
    output_destinations: tuple[DataPlace, ...] = _setting((), _PLACES)
    # The stack's default model package (a version or group ARN; then model_name is empty)
    # and the s3:// prefixes the jobs may read model data from.
    model_package_arn: str = ""
    model_sources: tuple[str, ...] = _setting((), _JSON_LIST)
    # "<framework> <version>" when the image is one of AWS's framework images (which has
    # no processing mode), else empty.
    framework_image: str = ""
    # The image of each accelerator its builds serve ("cpu", "gpu": run_image.py); a run's
    # jobs use the one for its instance type. Empty: image_uri, whatever the type.
    images: dict[str, str] = field(default_factory=dict, metadata=_JSON_OBJECT_FIELD)
    # The TransformAmiVersion of transform jobs on GPU types (the driver the GPU build needs).
    gpu_ami_version: str = ""
    # The endpoints runs of the endpoint engine may name.
    endpoints: tuple[EndpointTarget, ...] = _setting((), _ENDPOINTS)

    # Admission: the instance budget per type, the budget of other types, how long a run
    # may wait for instances, the Wait between two tries of a waiting run, and how long a
    # lease lives unless released.
    instance_budget: dict[str, int] = field(default_factory=dict, metadata=_JSON_OBJECT_FIELD)
    default_instance_budget: int = _setting(2, _NUMBER)
    admission_max_wait_seconds: int = _setting(360 * 60, _NUMBER)
    admission_poll_seconds: int = _setting(60, _NUMBER)
    lease_seconds: int = _setting(120 * 3600, _NUMBER)
    # The wait before the next round when a job failed for want of capacity (CapacityError),
    # doubling each round (limits.capacity_wait_seconds).
    capacity_wait_seconds: int = _setting(15 * 60, _NUMBER)

    @staticmethod
    def variable(name: str) -> str:
        """The environment variable that carries field ``name``."""
        return _PREFIX + name.upper()

    def to_variables(self) -> dict[str, str]:
        return {
            self.variable(f.name): _codec(f.metadata).encode(getattr(self, f.name))
            for f in fields(self)
        }

    @classmethod
    def from_variables(cls, variables: Mapping[str, str] | None = None) -> "PipelineEnvironment":
        variables = os.environ if variables is None else variables
        values = {}
        for f in fields(cls):
            name = cls.variable(f.name)
            if name in variables:
                values[f.name] = _codec(f.metadata).decode(variables[name])
        missing = [
            cls.variable(f.name)
            for f in fields(cls)
            if f.name not in values and f.default is MISSING and f.default_factory is MISSING
        ]
        if missing:
            raise BatchInferError(f"environment: {', '.join(missing)} not set")
        return cls(**values)

    @property
    def queue_seconds(self) -> int:
        """How long a waiting run keeps its place in the queue without asking again: three
        Waits and a minute, so a run that still waits never loses it."""
        return 3 * self.admission_poll_seconds + 60

    @property
    def vpc_config(self) -> dict[str, list[str]] | None:
        """A processing job's VpcConfig (transform jobs take the model's), or None."""
        if not self.subnet_ids:
            return None
        return {"Subnets": list(self.subnet_ids), "SecurityGroupIds": list(self.security_group_ids)}

    @property
    def input_places(self) -> tuple[DataPlace, ...]:
        """Where a run may read inputs: ``input/`` of the data bucket, then the sources."""
        return with_data_bucket(INPUT_PREFIX, self.data_bucket, self.data_sources, self.kms_key_arn)

    @property
    def output_places(self) -> tuple[DataPlace, ...]:
        """Where a run may write outputs: ``output/`` of the data bucket, then the
        destinations."""
        return with_data_bucket(
            OUTPUT_PREFIX, self.data_bucket, self.output_destinations, self.kms_key_arn
        )

    def output_key(self, uri: str) -> str:
        """The KMS key a job encrypts the outputs it writes under ``uri`` with ("" for the
        bucket's default encryption): the stack's key in the data bucket, the
        destination's key elsewhere."""
        if parse_s3_uri(uri).bucket == self.data_bucket:
            return self.kms_key_arn
        return data_places.place_of(uri, "output", self.output_places).kms_key_arn

    def budget_for(self, instance_type: str) -> int:
        """How many instances of ``instance_type`` the stack's runs may hold at once."""
        return self.instance_budget.get(instance_type, self.default_instance_budget)


def _codec(metadata: Mapping[str, Any]) -> _Codec:
    codec: _Codec = metadata.get("codec", _TEXT)
    return codec
