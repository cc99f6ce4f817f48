"""The settings the stack hands to the pipeline's Lambdas as environment variables."""

import json
import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any

from batchinfer.errors import BatchInferError
from batchinfer.pipeline.contract import data_places
from batchinfer.pipeline.contract.data_places import DataPlace, with_data_bucket
from batchinfer.pipeline.contract.layout import INPUT_PREFIX, OUTPUT_PREFIX
from batchinfer.uris import parse_s3_uri

_PREFIX = "BATCHINFER_"


@dataclass(frozen=True)
class PipelineEnvironment:
    """What every pipeline Lambda knows about its stack (all values are strings in the
    Lambda environment; ``transform_defaults`` and ``model_environment`` are JSON)."""

    table_name: str
    data_bucket: str
    job_prefix: str
    engine: str = "transform"
    transform_defaults: str = "{}"
    model_environment: str = "{}"
    shard_size: str = "64MiB"
    # Bytes a split may stream (gzip: compressed size x GZIP_EXPANSION) before the object
    # goes to a split job instead of the SplitObject Lambda; empty: never (split_job.py).
    split_job_threshold: str = ""
    max_rounds: str = "3"
    model_name: str = ""
    model_data_url: str = ""
    image_uri: str = ""
    sagemaker_role_arn: str = ""
    kms_key_arn: str = ""
    processing_volume_gb: str = "30"
    processing_max_runtime_seconds: str = "86400"
    topic_arn: str = ""
    event_bus_name: str = ""
    event_source: str = "batchinfer"
    run_record_days: str = "365"
    # Comma-separated, empty without a VPC: the processing jobs' VpcConfig.
    subnet_ids: str = ""
    security_group_ids: str = ""
    # JSON lists of the configured existing buckets (data_places.to_json).
    data_sources: str = "[]"
    output_destinations: str = "[]"
    # The stack's default model package (a version or group ARN; then model_name is empty)
    # and the s3:// prefixes the jobs may read model data from (JSON list).
    model_package_arn: str = ""
    model_sources: str = "[]"
    # "<framework> <version>" when the image is one of AWS's framework images (which has
    # no processing mode), else empty.
    framework_image: str = ""
    # JSON list of the endpoints runs of the endpoint engine may name (endpoints.py).
    endpoints: str = "[]"

    # Admission: the instance budget per type (JSON), the budget of other types, how long a
    # run may wait for instances, the Wait between two tries of a waiting run, and how long
    # a lease lives unless released.
    instance_budget: str = "{}"
    default_instance_budget: str = "2"
    admission_max_wait_seconds: str = "21600"
    admission_poll_seconds: str = "60"
    lease_seconds: str = "172800"

    @staticmethod
    def variable(name: str) -> str:
        """The environment variable that carries field ``name``."""
        return _PREFIX + name.upper()

    def to_variables(self) -> dict[str, str]:
        return {self.variable(f.name): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_variables(cls, variables: Mapping[str, str] | None = None) -> "PipelineEnvironment":
        variables = os.environ if variables is None else variables
        values = {}
        for f in fields(cls):
            name = cls.variable(f.name)
            if name in variables:
                values[f.name] = variables[name]
        missing = [
            cls.variable(f.name)
            for f in fields(cls)
            if f.name not in values and f.default is MISSING
        ]
        if missing:
            raise BatchInferError(f"environment: {', '.join(missing)} not set")
        return cls(**values)

    @property
    def defaults(self) -> dict[str, Any]:
        return json.loads(self.transform_defaults)

    @property
    def queue_seconds(self) -> int:
        """How long a waiting run keeps its place in the queue without asking again: three
        Waits and a minute, so a run that still waits never loses it."""
        return 3 * int(self.admission_poll_seconds) + 60

    @property
    def split_threshold(self) -> int | None:
        return int(self.split_job_threshold) if self.split_job_threshold else None

    @property
    def vpc_config(self) -> dict[str, list[str]] | None:
        """A processing job's VpcConfig (transform jobs take the model's), or None."""
        if not self.subnet_ids:
            return None
        return {
            "Subnets": self.subnet_ids.split(","),
            "SecurityGroupIds": self.security_group_ids.split(","),
        }

    @property
    def input_places(self) -> tuple[DataPlace, ...]:
        """Where a run may read inputs: ``input/`` of the data bucket, then the sources."""
        sources = data_places.from_json(self.data_sources)
        return with_data_bucket(INPUT_PREFIX, self.data_bucket, sources, self.kms_key_arn)

    @property
    def output_places(self) -> tuple[DataPlace, ...]:
        """Where a run may write outputs: ``output/`` of the data bucket, then the
        destinations."""
        destinations = data_places.from_json(self.output_destinations)
        return with_data_bucket(OUTPUT_PREFIX, self.data_bucket, destinations, self.kms_key_arn)

    def output_key(self, uri: str) -> str:
        """The KMS key a job encrypts the outputs it writes under ``uri`` with ("" for the
        bucket's default encryption): the stack's key in the data bucket, the
        destination's key elsewhere."""
        if parse_s3_uri(uri).bucket == self.data_bucket:
            return self.kms_key_arn
        return data_places.place_of(uri, "output", self.output_places).kms_key_arn

    def budget_for(self, instance_type: str) -> int:
        """How many instances of ``instance_type`` the stack's runs may hold at once."""
        budgets = json.loads(self.instance_budget)
        return int(budgets.get(instance_type, self.default_instance_budget))

    @property
    def model_source_list(self) -> list[str]:
        return json.loads(self.model_sources)

    @property
    def model_env(self) -> dict[str, str]:
        """The model's Environment (the CfnModel's), the base of its container's (R21)."""
        return json.loads(self.model_environment)
