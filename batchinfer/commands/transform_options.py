"""The CreateTransformJob settings as CLI options, declared once: ``--<field in kebab case>``
for every key of the settings schema, plus ``--env KEY=VALUE``. A command takes them all
with :func:`transform_options` and receives the ones the user gave as one mapping."""

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from batchinfer.errors import ValidationError
from batchinfer.transform.server_limits import DEFAULT_BATCH_RECORDS, MAX_BATCH_RECORDS_VAR
from batchinfer.transform.settings import PASCAL, RANGES

PANEL = "Transform job settings (CreateTransformJob)"
# settings key -> help; the option is the key in kebab case (``environment`` is --env).
HELP = {
    "content_type": "MIME type of the input (ContentType).",
    "accept": "MIME type the model returns (Accept).",
    "split_type": "None | Line | RecordIO | TFRecord.",
    "batch_strategy": "MultiRecord | SingleRecord.",
    "max_payload_mb": "Largest request body in MB, 0..100 (default 6).",
    "max_concurrent_transforms": "Parallel requests per instance (default: the server's).",
    "instance_count": "Instances (model servers locally), 1..100.",
    "instance_type": "ml.* instance type (locally: recorded for planning).",
    "assemble_with": "None | Line.",
    "join_source": "None | Input: join input and prediction.",
    "input_filter": "JSONPath applied to each record ($).",
    "output_filter": "JSONPath applied to each output ($).",
    "compression_type": "None | Gzip.",
    "invocations_timeout_seconds": "Seconds a request may take, 1..3600 (default 600).",
    "invocations_max_retries": "Retries of a failed request, 0..3 (default 3).",
    "environment": "KEY=VALUE for the model container (repeatable).",
    "bad_records": "fail | quarantine: a record the model refuses fails its file (the "
    "default, as SageMaker does), or is set aside, named in <output>.errors.jsonl, and the "
    "rest scored.",
    "max_bad_records": "With quarantine: a file fails past this many records set aside "
    "(default: no limit).",
}
if set(HELP) != set(PASCAL):  # every setting is an option, and nothing else
    raise RuntimeError(f"transform options and settings differ: {set(HELP) ^ set(PASCAL)}")


def option_name(key: str) -> str:
    """``max_payload_mb`` -> ``--max-payload-mb``; ``environment`` -> ``--env``."""
    return "--env" if key == "environment" else "--" + key.replace("_", "-")


def _parameter(key: str) -> inspect.Parameter:
    kind = list[str] if key == "environment" else int if key in RANGES else str
    info = typer.Option(option_name(key), help=HELP[key], rich_help_panel=PANEL, show_default=False)
    return inspect.Parameter(
        key,
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[kind | None, info],
    )


def transform_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``command`` every transform option. It must take ``transform``: a mapping of
    the options given (snake_case settings keys, ``environment`` parsed from ``--env``);
    options left out are not in it, so the settings' defaults (or a stack's) apply."""
    signature = inspect.signature(command)
    if "transform" not in signature.parameters:
        raise TypeError(f"{command.__name__} must take a `transform` keyword parameter")
    kept = [p for p in signature.parameters.values() if p.name != "transform"]
    options = [_parameter(key) for key in HELP]

    @functools.wraps(command)
    def with_options(*args: Any, **kwargs: Any) -> Any:
        given = {key: kwargs.pop(key) for key in HELP}
        environment = parse_env(given.pop("environment"))
        transform = {key: value for key, value in given.items() if value is not None}
        if environment:
            transform["environment"] = environment
        return command(*args, transform=transform, **kwargs)

    with_options.__signature__ = signature.replace(parameters=kept + options)  # type: ignore[attr-defined]
    with_options.__annotations__ = {p.name: p.annotation for p in kept + options}
    return with_options


def parse_env(pairs: list[str] | None) -> dict[str, str]:
    """``["A=1", "B=2"]`` -> ``{"A": "1", "B": "2"}``, naming a malformed entry."""
    env = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValidationError(f"--env: {pair!r} is not KEY=VALUE")
        env[key] = value
    return env


TABLE_PANEL = "Tables (a header row, delimiters, text encodings)"
Header = Annotated[
    bool,
    typer.Option(
        "--header",
        help="Inputs start with a header row: it is no record, and a model fitted on a "
        "DataFrame gets the columns by name.",
        rich_help_panel=TABLE_PANEL,
    ),
]
Delimiter = Annotated[
    str | None,
    typer.Option(
        help="CSV field delimiter: one character, e.g. ';' or tab (default ',').",
        rich_help_panel=TABLE_PANEL,
        show_default=False,
    ),
]
Encoding = Annotated[
    str | None,
    typer.Option(
        help="Text encoding of the input, e.g. latin-1 (default utf-8); sent as the "
        "content type's charset.",
        rich_help_panel=TABLE_PANEL,
        show_default=False,
    ),
]

MODEL_PANEL = "Model server"
MaxBatchRecords = Annotated[
    int | None,
    typer.Option(
        min=0,
        help="Records per forward pass of the model: each request's records are predicted "
        f"this many at a time ({MAX_BATCH_RECORDS_VAR} in the model's environment; "
        f"default: {DEFAULT_BATCH_RECORDS:,}; 0: all of a request's at once).",
        rich_help_panel=MODEL_PANEL,
        show_default=False,
    ),
]


def with_batch_records(transform: dict[str, Any], records: int | None) -> dict[str, Any]:
    """The settings keys ``transform`` with ``records`` (``--max-batch-records``) in the
    model's environment."""
    if records is None:
        return transform
    environment = {**transform.get("environment", {}), MAX_BATCH_RECORDS_VAR: str(records)}
    return {**transform, "environment": environment}
