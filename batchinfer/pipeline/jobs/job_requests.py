"""The Create*Job requests of a run's jobs (CreateTransformJob, CreateProcessingJob) and
the checks that a run's settings fit them.

The state machine copies each top-level field of a request into the .sync task's
Parameters, so every field named there is always present. Unset batch settings take what
R10 (the job's batch settings, else the container's, else defaults) would give:
MaxConcurrentTransforms 0 (SageMaker then asks the container, whose answer depends on its workers),
and for BatchStrategy and MaxPayloadInMB what our container's ``/execution-parameters`` answers for
the environment it will have (R21: the model's, then the job's): MULTI_RECORD and
SAGEMAKER_MAX_PAYLOAD_IN_MB (else 6). DataProcessing is present only when a filter or join applies
(the state machine has a task with and one without it).
"""

import json
import math
from dataclasses import asdict
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.instances.specs import SPECS
from batchinfer.instances.supported import has_local_storage
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.jobs.run_image import run_image, transform_ami_version
from batchinfer.transform.job_api import to_api
from batchinfer.transform.server_limits import (
    BATCH_STRATEGY,
    TIMEOUT_VAR,
    WORKERS_VAR,
    configured_workers,
    max_payload_mb,
)
from batchinfer.transform.settings import MAX_PAYLOAD_X_CONCURRENCY_MB, TransformSettings
from batchinfer.units import MIB

PROCESSING_INPUT = "/opt/ml/processing/input/data"
PROCESSING_MODEL = "/opt/ml/processing/input/model"
PROCESSING_OUTPUT = "/opt/ml/processing/output"
PROCESSING_ENTRYPOINT = ["batchinfer", "process"]
MAX_CONTAINER_ARGUMENT = 256
GIB = 1024**3
# A processing instance's room for the model and scratch, in GB, and how much larger than
# its gzip input its output is taken to be (CSV and JSON Lines compress about 5:1).
MODEL_AND_SCRATCH_GB = 5
GZIP_EXPANSION = 5
# Settings that choose instances, not what the container does with records.
_RESOURCE_KEYS = ("instance_count", "instance_type")

# The fields of each request; the .sync tasks copy exactly these.
TRANSFORM_FIELDS = (
    "TransformJobName",
    "ModelName",
    "TransformInput",
    "TransformOutput",
    "TransformResources",
    "BatchStrategy",
    "MaxPayloadInMB",
    "MaxConcurrentTransforms",
    "ModelClientConfig",
    "Environment",
    "Tags",
)
PROCESSING_FIELDS = (
    "ProcessingJobName",
    "RoleArn",
    "AppSpecification",
    "ProcessingInputs",
    "ProcessingOutputConfig",
    "ProcessingResources",
    "NetworkConfig",
    "StoppingCondition",
    "Environment",
    "Tags",
)


def transform_request(
    name: str,
    settings: TransformSettings,
    manifest: str,
    output: str,
    env: PipelineEnvironment,
    *,
    model_name: str,
) -> dict[str, Any]:
    api = to_api(settings, input_uri=manifest, data_type="ManifestFile", output_path=output)
    effective = settings.resolve(container_parameters(settings, env))
    request = {
        "TransformJobName": name,
        "ModelName": model_name,
        **api,
        "BatchStrategy": effective.batch_strategy,
        "MaxPayloadInMB": effective.max_payload_mb,
        "MaxConcurrentTransforms": settings.max_concurrent_transforms or 0,
        "Environment": settings.job_environment,
    }
    if env.framework_image.partition(" ")[0] == "pytorch":
        request |= torchserve_settings(settings, env, effective.max_payload_mb)
    if output_key := env.output_key(output):
        request["TransformOutput"] = {**request["TransformOutput"], "KmsKeyId": output_key}
    if volume_key := _volume_key(settings, env):
        request["TransformResources"] = {
            **request["TransformResources"],
            "VolumeKmsKeyId": volume_key,
        }
    if ami := transform_ami_version(settings.instance_type, env):
        request["TransformResources"] = {
            **request["TransformResources"],
            "TransformAmiVersion": ami,
        }
    return request


def torchserve_settings(
    settings: TransformSettings, env: PipelineEnvironment, payload_mb: int
) -> dict[str, Any]:
    """MaxConcurrentTransforms and Environment of a job on AWS's PyTorch image, set for a
    batch job. That image serves with TorchServe as SageMaker's inference toolkit configures
    it, with defaults for real-time endpoints that fail batch jobs: requests and responses
    over 6,553,500 bytes answered 413 (TorchServe's max_request_size, max_response_size), 60 s
    a request, workers and so MaxConcurrentTransforms of its own choosing. Here: TorchServe's
    limits from MaxPayloadInMB (a response twice it: a joined output holds its input), the
    toolkit's timeout from InvocationsTimeoutInSeconds, a worker per GPU (else per vCPU) and
    as many requests in flight (R1: at most 100 MB in flight). A value the model's or the
    job's environment sets wins."""
    given = settings.container_environment(env.model_environment)
    spec = SPECS.get(settings.instance_type)
    workers = None if spec is None else spec.gpus or spec.vcpus
    wanted = {TIMEOUT_VAR: str(settings.invocations_timeout_seconds)}
    if payload_mb:  # 0: no limit
        wanted |= {
            "TS_MAX_REQUEST_SIZE": str(payload_mb * MIB),
            "TS_MAX_RESPONSE_SIZE": str(2 * payload_mb * MIB),
        }
    if workers:
        wanted[WORKERS_VAR] = str(workers)
    environment = settings.job_environment | {
        key: value for key, value in wanted.items() if key not in given
    }
    serving = configured_workers(given) or workers or 0
    within_r1 = MAX_PAYLOAD_X_CONCURRENCY_MB // payload_mb if payload_mb else serving
    concurrency = settings.max_concurrent_transforms or min(serving, within_r1)
    return {"MaxConcurrentTransforms": concurrency, "Environment": environment}


def _volume_key(settings: TransformSettings, env: PipelineEnvironment) -> str:
    """The stack's key for the instances' storage volume; none on a type with an instance
    store, where SageMaker refuses one (the platform encrypts that storage itself)."""
    return "" if has_local_storage(settings.instance_type) else env.kms_key_arn


def container_parameters(settings: TransformSettings, env: PipelineEnvironment) -> dict[str, Any]:
    """BatchStrategy and MaxPayloadInMB as our container's ``/execution-parameters`` answers
    them in the environment a job of ``settings`` gives it (R10, R21)."""
    container_env = settings.container_environment(env.model_environment)
    return {"BatchStrategy": BATCH_STRATEGY, "MaxPayloadInMB": max_payload_mb(container_env)}


def check_payload_times_concurrency(settings: TransformSettings, env: PipelineEnvironment) -> None:
    """R1: MaxConcurrentTransforms x MaxPayloadInMB <= 100 also when the payload is the one
    the container answers (the job request then carries that value, and SageMaker checks it)."""
    concurrency = settings.max_concurrent_transforms
    if not concurrency or settings.max_payload_mb is not None:
        return  # TransformSettings already checked a payload the job sets itself
    payload = settings.resolve(container_parameters(settings, env)).max_payload_mb
    if payload * concurrency > MAX_PAYLOAD_X_CONCURRENCY_MB:
        raise ValidationError(
            f"max_concurrent_transforms (MaxConcurrentTransforms): {concurrency} x the "
            f"container's MaxPayloadInMB {payload} is over {MAX_PAYLOAD_X_CONCURRENCY_MB}; "
            "lower it or set max_payload_mb"
        )


def processing_arguments(settings: TransformSettings) -> list[str]:
    """``batchinfer process`` arguments carrying the settings that differ from the defaults
    (a container argument holds at most 256 characters); with quarantine, the records set
    aside stay marked in the outputs, as a transform job's do, for CountShard to take out."""
    defaults = asdict(TransformSettings())
    changed = {
        key: value
        for key, value in asdict(settings).items()
        if key not in _RESOURCE_KEYS and value != defaults[key]
    }
    text = json.dumps(changed, separators=(",", ":"), sort_keys=True)
    if len(text) > MAX_CONTAINER_ARGUMENT:
        raise ValidationError(
            f"engine processing: the settings take {len(text)} characters as a container "
            f"argument; SageMaker allows {MAX_CONTAINER_ARGUMENT}. Shorten the filters or the "
            "environment, or use engine transform"
        )
    marks = ["--marks-in-output"] if settings.bad_record_allowance is not None else []
    return ["--settings-json", text, *marks]


def processing_volume_gb(input_bytes: int, settings: TransformSettings, largest: int) -> int:
    """The storage volume of each processing instance: its share of the inputs
    (ShardedByS3Key) and outputs of about that size (gzip inputs decompressed, taken as
    :data:`GZIP_EXPANSION` times larger), plus room for the model and scratch; at least
    that room, at most ``largest`` (the stack's ``processing_volume_gb``)."""
    share = input_bytes / settings.instance_count
    outputs = share * (GZIP_EXPANSION if settings.compression_type == "Gzip" else 1)
    needed = math.ceil((share + outputs) / GIB) + MODEL_AND_SCRATCH_GB
    return max(MODEL_AND_SCRATCH_GB, min(largest, needed))


def processing_request(
    name: str,
    settings: TransformSettings,
    manifest: str,
    output: str,
    env: PipelineEnvironment,
    *,
    volume_gb: int,
    model_data_url: str,
) -> dict[str, Any]:
    cluster = {
        "InstanceCount": settings.instance_count,
        "InstanceType": settings.instance_type,
        "VolumeSizeInGB": volume_gb,
    }
    output_config: dict[str, Any] = {
        "Outputs": [
            {
                "OutputName": "output",
                "S3Output": {
                    "S3Uri": output,
                    "LocalPath": PROCESSING_OUTPUT,
                    "S3UploadMode": "EndOfJob",
                },
            }
        ]
    }
    if output_key := env.output_key(output):
        output_config["KmsKeyId"] = output_key
    if volume_key := _volume_key(settings, env):
        cluster["VolumeKmsKeyId"] = volume_key
    return {
        "ProcessingJobName": name,
        "RoleArn": env.sagemaker_role_arn,
        "AppSpecification": {
            "ImageUri": run_image(settings.instance_type, env),
            "ContainerEntrypoint": PROCESSING_ENTRYPOINT,
            "ContainerArguments": processing_arguments(settings),
        },
        "ProcessingInputs": [
            _processing_input("data", manifest, "ManifestFile", "ShardedByS3Key", PROCESSING_INPUT),
            _processing_input(
                "model", model_data_url, "S3Prefix", "FullyReplicated", PROCESSING_MODEL
            ),
        ],
        "ProcessingOutputConfig": output_config,
        "ProcessingResources": {"ClusterConfig": cluster},
        "NetworkConfig": {"EnableNetworkIsolation": True}
        | ({"VpcConfig": env.vpc_config} if env.vpc_config else {}),
        "StoppingCondition": {"MaxRuntimeInSeconds": env.processing_max_runtime_seconds},
        "Environment": dict(settings.environment),
    }


def _processing_input(
    name: str, uri: str, data_type: str, distribution: str, local_path: str
) -> dict[str, Any]:
    return {
        "InputName": name,
        "S3Input": {
            "S3Uri": uri,
            "LocalPath": local_path,
            "S3DataType": data_type,
            "S3InputMode": "File",
            "S3DataDistributionType": distribution,
        },
    }
