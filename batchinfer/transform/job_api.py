"""Transform settings as the CreateTransformJob API spells them, both ways: the request
fragments a job of these settings sends (spec S1: PascalCase, unset values omitted), and
the settings a request carries (what a transform job does with a request it is given).

Standard library only: the PrepareJob Lambda builds its requests with it.
"""

from collections.abc import Mapping
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.transform.bad_records import MAX_BAD_RECORDS_VAR, NO_LIMIT
from batchinfer.transform.settings import PASCAL, TransformSettings
from batchinfer.uris import parse_s3_uri

S3_DATA_TYPES = ("S3Prefix", "ManifestFile")
# The request sections that hold settings, below the request itself.
_SECTIONS = (
    "TransformInput",
    "TransformOutput",
    "TransformResources",
    "ModelClientConfig",
    "DataProcessing",
)


def to_api(
    settings: TransformSettings,
    *,
    input_uri: str | None = None,
    data_type: str = "S3Prefix",
    output_path: str | None = None,
) -> dict[str, Any]:
    """The CreateTransformJob request fragments ``settings`` determine (PascalCase, unset
    values omitted). S3 locations are included when given."""
    data_source = None
    if input_uri is not None:
        if data_type not in S3_DATA_TYPES:
            raise ValidationError(
                f"data_type (S3DataType): {data_type!r} is not allowed; "
                f"allowed: {', '.join(S3_DATA_TYPES)}"
            )
        parse_s3_uri(input_uri, field="input (S3Uri)")
        data_source = {"S3DataSource": {"S3DataType": data_type, "S3Uri": input_uri}}
    if output_path is not None:
        parse_s3_uri(output_path, field="output (S3OutputPath)")
    request: dict[str, Any] = {
        "TransformInput": _present(
            DataSource=data_source,
            ContentType=settings.content_type,
            CompressionType=settings.compression_type,
            SplitType=settings.split_type,
        ),
        "TransformOutput": _present(
            S3OutputPath=output_path, Accept=settings.accept, AssembleWith=settings.assemble_with
        ),
        "TransformResources": {
            "InstanceType": settings.instance_type,
            "InstanceCount": settings.instance_count,
        },
        "ModelClientConfig": {
            "InvocationsTimeoutInSeconds": settings.invocations_timeout_seconds,
            "InvocationsMaxRetries": settings.invocations_max_retries,
        },
    }
    if settings.uses_data_processing:
        request["DataProcessing"] = {
            "InputFilter": settings.input_filter,
            "OutputFilter": settings.output_filter,
            "JoinSource": settings.join_source,
        }
    request.update(
        _present(
            BatchStrategy=settings.batch_strategy,
            MaxPayloadInMB=settings.max_payload_mb,
            MaxConcurrentTransforms=settings.max_concurrent_transforms,
            Environment=settings.job_environment or None,
        )
    )
    return request


def from_api(request: Mapping[str, Any]) -> TransformSettings:
    """The settings a CreateTransformJob request carries, validated (the inverse of
    :func:`to_api`). MaxConcurrentTransforms 0 means "ask the container" (R10: the job's batch
    settings, else the container's, else defaults): unset."""
    sections = [request, *(request.get(name) or {} for name in _SECTIONS)]
    values = {}
    for snake, pascal in PASCAL.items():
        for section in sections:
            if pascal in section:
                values[snake] = section[pascal]
    if values.get("max_concurrent_transforms") == 0:
        values["max_concurrent_transforms"] = None
    environment = dict(values.get("environment") or {})
    allowance = environment.pop(MAX_BAD_RECORDS_VAR, None)
    if allowance is not None:  # the settings' own (TransformSettings.job_environment)
        values["environment"] = environment
        values["bad_records"] = "quarantine"
        values["max_bad_records"] = None if allowance == str(NO_LIMIT) else _whole(allowance)
    return TransformSettings.from_request(values)


def _whole(text: str) -> int | str:
    """``text`` as the whole number it spells, else as it is (validation names it)."""
    return int(text) if text.isdigit() else text


def _present(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
