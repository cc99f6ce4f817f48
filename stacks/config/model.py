"""The default model of a run: ``model_data``, ``model_package_arn`` or ``model_name``, and
``model_sources``, where the jobs may read model data."""

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchinfer.errors import ValidationError
from batchinfer.pipeline.jobs.run_model import PACKAGE_GROUP, PACKAGE_VERSION
from batchinfer.uris import is_s3_uri, parse_s3_uri
from stacks.config.checks import require

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig

MODEL_CONFIG_KEYS = ("model_data", "model_package_arn", "model_name")
_MODEL_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")


def check_one_model(values: Mapping[str, Any], where: str) -> None:
    """The raw environment gives exactly one of :data:`MODEL_CONFIG_KEYS`."""
    models = [key for key in MODEL_CONFIG_KEYS if values.get(key) is not None]
    if len(models) != 1:
        raise ValidationError(
            f"{where}: give exactly one of {', '.join(MODEL_CONFIG_KEYS)}"
            + (f" (got {', '.join(models)})" if models else "")
        )


def check_model(config: "PipelineConfig", where: str, base_dir: Path) -> None:
    """Model data is an S3 URI or an archive under ``base_dir``; a package names the
    prefixes its versions' data lie under; an existing model runs transform jobs only."""
    if config.model_data is not None and is_s3_uri(config.model_data):
        parse_s3_uri(config.model_data, field=f"{where}.model_data")
    elif config.model_data is not None:
        require(
            (base_dir / config.model_data).is_file() and config.model_data.endswith(".tar.gz"),
            f"{where}.model_data",
            config.model_data,
            "an s3:// URI or the path of an existing model.tar.gz (relative to cdk.json)",
        )
    if config.model_package_arn is not None:
        arn = config.model_package_arn
        require(
            isinstance(arn, str)
            and (PACKAGE_VERSION.fullmatch(arn) or PACKAGE_GROUP.fullmatch(arn)),
            f"{where}.model_package_arn",
            arn,
            "a model package version ARN (...:model-package/<group>/<version>) or group ARN "
            "(...:model-package-group/<group>)",
        )
        require(
            config.model_sources,
            f"{where}.model_sources",
            [],
            "the s3:// prefixes the package versions' model data lie under (the jobs read "
            "them), e.g. s3://sagemaker-<region>-<account>/",
        )
    if config.model_name is not None:
        require(
            isinstance(config.model_name, str) and _MODEL_NAME.fullmatch(config.model_name),
            f"{where}.model_name",
            config.model_name,
            "the name of an existing SageMaker model",
        )
        require(
            config.engine == "transform",
            f"{where}.engine",
            config.engine,
            "transform with model_name (processing jobs load model data, which an existing "
            "model does not share)",
        )
    for number, source in enumerate(config.model_sources):
        at = f"{where}.model_sources[{number}]"
        require(isinstance(source, str) and is_s3_uri(source), at, source, "an s3:// prefix")
        parse_s3_uri(source, field=at)
