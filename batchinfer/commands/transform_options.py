"""The CreateTransformJob settings as CLI options (kebab case of the API fields), shared by
``run`` and ``process`` so both build :class:`TransformSettings` the same way."""

from typing import Annotated, Any

import typer

from batchinfer.errors import ValidationError
from batchinfer.transform.settings import TransformSettings

_PANEL = "Transform job settings (CreateTransformJob)"


def _opt(name: str, help_text: str) -> typer.models.OptionInfo:
    return typer.Option(name, help=help_text, rich_help_panel=_PANEL, show_default=False)


ContentType = Annotated[str | None, _opt("--content-type", "MIME type of the input (ContentType).")]
Accept = Annotated[str | None, _opt("--accept", "MIME type the model returns (Accept).")]
SplitType = Annotated[str, _opt("--split-type", "None | Line | RecordIO | TFRecord.")]
BatchStrategy = Annotated[str | None, _opt("--batch-strategy", "MultiRecord | SingleRecord.")]
MaxPayloadMb = Annotated[
    int | None, _opt("--max-payload-mb", "Largest request body in MB, 0..100 (default 6).")
]
MaxConcurrent = Annotated[
    int | None,
    _opt("--max-concurrent-transforms", "Parallel requests per instance (default: the server's)."),
]
InstanceCount = Annotated[int, _opt("--instance-count", "Model servers to run (1..100).")]
InstanceType = Annotated[str, _opt("--instance-type", "Recorded for planning; ml.* only.")]
AssembleWith = Annotated[str, _opt("--assemble-with", "None | Line.")]
JoinSource = Annotated[str, _opt("--join-source", "None | Input: join input and prediction.")]
InputFilter = Annotated[str, _opt("--input-filter", "JSONPath applied to each record ($).")]
OutputFilter = Annotated[str, _opt("--output-filter", "JSONPath applied to each output ($).")]
CompressionType = Annotated[str, _opt("--compression-type", "None | Gzip.")]
Env = Annotated[list[str] | None, _opt("--env", "KEY=VALUE for the model container (repeatable).")]


def parse_env(pairs: list[str] | None) -> dict[str, str]:
    """``["A=1", "B=2"]`` -> ``{"A": "1", "B": "2"}``, naming a malformed entry."""
    env = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValidationError(f"--env: {pair!r} is not KEY=VALUE")
        env[key] = value
    return env


def build_settings(env: list[str] | None, **options: Any) -> TransformSettings:
    """Validated job settings from the CLI option values, named as the TransformSettings
    fields (errors name the field, R1/R2/R15)."""
    return TransformSettings.from_request({**options, "environment": parse_env(env)})
