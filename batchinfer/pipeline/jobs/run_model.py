"""The model a run's jobs use.

By default the stack's: a model made at deploy from ``model_data``, or an existing model
the configuration names. A run gets a model of its own when its request names one
(``model_package_arn`` or ``model_data``) or when the stack's default is a model package
of the SageMaker Model Registry: a version, or a group whose newest approved version each
run takes. Plan checks it (a package must be approved, model data must lie under the
stack's model sources, which the jobs may read) and creates it after claiming the run;
Finalize or the failure recorder deletes it when the run ends. A transform run whose
instance type needs another of the stack's images than its model runs (run_image.py) gets
a model of its own too: the stack's model data on that image.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from botocore.exceptions import ClientError

from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.job_names import RUN_ID_TAG
from batchinfer.uris import parse_s3_uri

MODEL_KEYS = ("model_package_arn", "model_data")
APPROVED = "Approved"
_NAME = r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
_ARN = r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:"
PACKAGE_VERSION = re.compile(_ARN + rf"model-package/{_NAME}/\d+")
PACKAGE_GROUP = re.compile(_ARN + rf"model-package-group/{_NAME}")
ALREADY_EXISTS = "Cannot create already existing model"
NOT_FOUND = "Could not find model"


@dataclass(frozen=True)
class OwnModel:
    """A run's own model: an approved package version or model data, the model data its
    processing jobs load, and the image of a model of data (a package names its own)."""

    package_arn: str | None
    model_data_url: str
    image: str = ""


def run_model_name(job_base: str) -> str:
    """The name of a run's own model (inside the jobs' IAM name prefix)."""
    return f"{job_base}-model"


def own_model(
    request: Mapping[str, Any], env: PipelineEnvironment, sagemaker: Any
) -> OwnModel | None:
    """The model the run asks for, or the stack's package; None for the stack's model."""
    given = [key for key in MODEL_KEYS if key in request]
    if len(given) > 1:
        raise ValidationError(f"{', '.join(given)}: give one of them, not both")
    if given == ["model_data"]:
        return OwnModel(None, _model_data(request["model_data"], "model_data", env))
    arn = request["model_package_arn"] if given else env.model_package_arn
    if not arn:
        return None
    field = "model_package_arn" if given else "the stack's model_package_arn"
    if not isinstance(arn, str) or not (
        PACKAGE_VERSION.fullmatch(arn) or PACKAGE_GROUP.fullmatch(arn)
    ):
        raise ValidationError(
            f"{field}: {arn!r} is not a model package version ARN "
            "(arn:aws:sagemaker:<region>:<account>:model-package/<group>/<version>) or group ARN "
            "(...:model-package-group/<group>)"
        )
    version = _newest_approved(arn, field, sagemaker) if PACKAGE_GROUP.fullmatch(arn) else arn
    described = sagemaker.describe_model_package(ModelPackageName=version)
    status = described.get("ModelApprovalStatus", "PendingManualApproval")
    if status != APPROVED:
        raise ValidationError(
            f"{field}: {version} is {status}, not {APPROVED}; approve it in the Model Registry "
            "or name an approved version"
        )
    containers = described.get("InferenceSpecification", {}).get("Containers", [])
    if len(containers) != 1 or "ModelDataUrl" not in containers[0]:
        raise ValidationError(
            f"{field}: {version} has {len(containers)} containers; runs need exactly one, "
            "with ModelDataUrl"
        )
    data = _model_data(containers[0]["ModelDataUrl"], f"{field} {version} ModelDataUrl", env)
    return OwnModel(version, data)


def model_on_image(
    model: OwnModel | None, image: str, instance_type: str, env: PipelineEnvironment
) -> OwnModel | None:
    """The run's model once its image is known: its own model data on ``image``; or, when
    the stack's model runs another image, the stack's model data on ``image``. A package
    keeps the image it names."""
    if model is not None:
        return model if model.package_arn else replace(model, image=image)
    if image == env.image_uri:
        return None
    if not env.model_data_url:
        raise ValidationError(
            f"instance_type (InstanceType): a run on {instance_type} needs the image {image}, "
            f"but the stack's model {env.model_name} runs {env.image_uri} and the stack does "
            "not know its data; name model_data for the run"
        )
    return OwnModel(None, env.model_data_url, image)


def _newest_approved(group: str, field: str, sagemaker: Any) -> str:
    versions = [
        summary
        for page in sagemaker.get_paginator("list_model_packages").paginate(
            ModelPackageGroupName=group.rsplit("/", 1)[1], ModelApprovalStatus=APPROVED
        )
        for summary in page["ModelPackageSummaryList"]
    ]
    if not versions:
        raise ValidationError(f"{field}: {group} has no {APPROVED} version")
    return max(versions, key=lambda s: s.get("ModelPackageVersion", 0))["ModelPackageArn"]


def _model_data(uri: Any, field: str, env: PipelineEnvironment) -> str:
    """``uri`` if it is an ``s3://`` ``.tar.gz`` under one of the stack's model sources."""
    if not isinstance(uri, str):
        raise ValidationError(f"{field}: {uri!r} is not an s3:// URI of a model.tar.gz")
    location = parse_s3_uri(uri, field=field)
    sources = env.model_sources
    if not location.key.endswith(".tar.gz"):
        raise ValidationError(f"{field}: {uri!r} is not a .tar.gz model archive")
    if not any(uri.startswith(source) for source in sources):
        raise ValidationError(
            f"{field}: {uri!r} is outside the stack's model_sources, which its jobs may read: "
            f"{', '.join(sources) or 'none configured'}"
        )
    return uri


def create_run_model(
    model: OwnModel, name: str, *, run_id: str, env: PipelineEnvironment, sagemaker: Any
) -> None:
    """Create the run's model ``name``; one left by an earlier attempt of this step is kept
    (its name belongs to this run)."""
    container: dict[str, Any] = (
        {"ModelPackageName": model.package_arn}
        if model.package_arn
        else {"Image": model.image or env.image_uri, "ModelDataUrl": model.model_data_url}
    )
    if env.model_environment:
        container["Environment"] = env.model_environment
    request: dict[str, Any] = {
        "ModelName": name,
        "ExecutionRoleArn": env.sagemaker_role_arn,
        "PrimaryContainer": container,
        "EnableNetworkIsolation": True,
        "Tags": [{"Key": RUN_ID_TAG, "Value": run_id}],
    }
    if env.vpc_config:
        request["VpcConfig"] = env.vpc_config
    try:
        sagemaker.create_model(**request)
    except ClientError as exc:
        if ALREADY_EXISTS not in str(exc):
            raise


def delete_run_model(name: str, sagemaker: Any) -> None:
    """Delete a run's model; one already gone is fine (the step may run again)."""
    try:
        sagemaker.delete_model(ModelName=name)
    except ClientError as exc:
        if NOT_FOUND not in str(exc):
            raise
