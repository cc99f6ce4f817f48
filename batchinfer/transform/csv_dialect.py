"""How a CSV input names and separates its columns, and how the model server is told.

A header row is not a record: the engines (and the pipeline's Split) drop it from the data
they send, read its names once, and hand them to the model server in its environment, so
every request (each a headerless run of records, as SageMaker frames them) is decoded with
the same names. The delimiter rides beside them; the text encoding rides on the request's
Content-Type (``text/csv; charset=latin-1``), as HTTP carries it. An endpoint's server has
its own environment: each request's CustomAttributes tell it the same, and the Parquet join
a job's environment asks for (:class:`RequestAttributes`).

Standard library only: the Plan Lambda reads a header with it too.
"""

import codecs
import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from batchinfer.errors import InputError, ValidationError
from batchinfer.media_types import CSV, media_type
from batchinfer.transform.settings import JOIN_SOURCE_VAR, TransformSettings

# The header's names as a JSON array, in the order of the fields the model server receives.
COLUMNS_VAR = "BATCHINFER_CSV_COLUMNS"
# The field delimiter when it is not a comma: one character.
DELIMITER_VAR = "BATCHINFER_CSV_DELIMITER"
DEFAULT_DELIMITER = ","
DEFAULT_CHARSET = "utf-8"
# The longest value SageMaker accepts in a job's Environment.
MAX_ENVIRONMENT_VALUE = 10240
# An endpoint's server has its own environment: a request tells it the names instead, in
# InvokeEndpoint's CustomAttributes (the X-Amzn-SageMaker-Custom-Attributes header the
# container receives), at most 1,024 visible ASCII characters.
CUSTOM_ATTRIBUTES_HEADER = "X-Amzn-SageMaker-Custom-Attributes"
ATTRIBUTES_PREFIX = "batchinfer-csv="
MAX_CUSTOM_ATTRIBUTES = 1024


def check_delimiter(value: str, *, option: str = "--delimiter") -> str:
    """A delimiter is one character other than a quote, a line end or a space: ``\\t`` and
    ``tab`` mean a tab."""
    delimiter = "\t" if value in ("\\t", "tab") else value
    if len(delimiter) != 1 or delimiter in '"\r\n ':
        raise ValidationError(
            f"{option}: {value!r} must be one character (',', ';', '|' or tab), not a quote, "
            "a space or a line end"
        )
    return delimiter


def charset(content_type: str | None) -> str:
    """The ``charset`` parameter of a Content-Type (``utf-8`` when absent), checked to be an
    encoding Python knows; ValidationError otherwise."""
    for parameter in (content_type or "").split(";")[1:]:
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset":
            return check_charset(value.strip().strip('"'))
    return DEFAULT_CHARSET


def check_charset(name: str, *, option: str = "charset") -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        raise ValidationError(
            f"{option}: {name!r} is not a text encoding (e.g. utf-8, latin-1, cp1252)"
        ) from None


def with_charset(content_type: str | None, encoding: str | None) -> str | None:
    """``content_type`` carrying ``charset=<encoding>`` (unchanged when ``encoding`` is None)."""
    if encoding is None:
        return content_type
    name = check_charset(encoding, option="--encoding")
    if content_type is None:
        raise ValidationError("--encoding needs --content-type (the text type it decodes)")
    kept = [p for p in content_type.split(";")[1:] if p.split("=")[0].strip().lower() != "charset"]
    return "; ".join([content_type.split(";")[0].strip(), *map(str.strip, kept), f"charset={name}"])


def header_names(line: bytes, settings: TransformSettings, *, source: str) -> list[str]:
    """The column names of a header line, read with the delimiter and charset ``settings``
    give: decoded, split as a CSV row, each name non-empty and distinct. InputError naming
    ``source`` otherwise."""
    delimiter = delimiter_from_environment(settings.environment)
    encoding = charset(settings.content_type)
    try:
        text = line.decode(encoding).removeprefix("\ufeff").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: its header line is not {encoding} text: {exc}") from None
    if not text.strip():
        raise InputError(f"{source}: its header line is empty")
    names = [name.strip() for name in next(csv.reader([text], delimiter=delimiter))]
    blank = [str(n) for n, name in enumerate(names, start=1) if not name]
    if blank:
        raise InputError(f"{source}: header column {', '.join(blank)} has no name")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{source}: header names {name!r} twice")
        seen.add(name)
    return names


def same_header(expected: list[str], found: list[str], *, first: str, source: str) -> None:
    """Every input of one job shares the first input's header: the model server is told one
    set of names. InputError naming the file and the first column that differs."""
    if found == expected:
        return
    for position, (a, b) in enumerate(zip(expected, found, strict=False), start=1):
        if a != b:
            raise InputError(
                f"{source}: header column {position} is {b!r} where {first} has {a!r}; "
                "the inputs of one job share one header"
            )
    raise InputError(
        f"{source}: header has {len(found)} columns where {first} has {len(expected)}; "
        "the inputs of one job share one header"
    )


def dialect_environment(columns: list[str] | None, delimiter: str) -> dict[str, str]:
    """The model server's environment entries that describe the CSV records it receives."""
    env: dict[str, str] = {}
    if columns is not None:
        value = json.dumps(columns, ensure_ascii=False, separators=(",", ":"))
        if len(value) > MAX_ENVIRONMENT_VALUE:
            raise ValidationError(
                f"the header's {len(columns)} names take {len(value)} characters; a SageMaker "
                f"job's environment holds at most {MAX_ENVIRONMENT_VALUE} per value"
            )
        env[COLUMNS_VAR] = value
    if delimiter != DEFAULT_DELIMITER:
        env[DELIMITER_VAR] = delimiter
    return env


def columns_from_environment(env: Mapping[str, str]) -> list[str] | None:
    """The names :func:`dialect_environment` wrote, or None."""
    value = env.get(COLUMNS_VAR)
    if not value:
        return None
    try:
        names = json.loads(value)
    except ValueError as exc:
        raise ValidationError(f"{COLUMNS_VAR} is not a JSON array of names: {exc}") from None
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        raise ValidationError(f"{COLUMNS_VAR} must be a JSON array of column names")
    return names


def delimiter_from_environment(env: Mapping[str, str]) -> str:
    return check_delimiter(env.get(DELIMITER_VAR) or DEFAULT_DELIMITER, option=DELIMITER_VAR)


def check_header_type(settings: TransformSettings, *, option: str = "--header") -> None:
    """A header row is a CSV notion: the content type must be text/csv (or left out)."""
    if settings.content_type is not None and media_type(settings.content_type) != CSV:
        raise ValidationError(
            f"{option} is for text/csv input, not {settings.content_type!r}: JSON records "
            "name their features by key"
        )


def with_header(settings: TransformSettings, names: list[str]) -> TransformSettings:
    """``settings`` whose environment tells the model server the names of the fields it
    receives: the header's, after the input filter (R16: a CSV row's filter selects fields
    by index, so it selects the header's names the same way)."""
    selected = names if settings.input_path.is_root else settings.input_path.apply(names)
    columns = [str(s) for s in selected] if isinstance(selected, list) else [str(selected)]
    delimiter = delimiter_from_environment(settings.environment)
    dialect = dialect_environment(columns, delimiter)
    return replace(settings, environment={**settings.environment, **dialect})


@dataclass(frozen=True)
class RequestAttributes:
    """What an endpoint request's CustomAttributes tell the model server: the CSV columns
    and delimiter, and whether a Parquet answer joins the input's columns."""

    columns: list[str] | None
    delimiter: str
    join_input: bool = False


def custom_attributes(env: Mapping[str, str]) -> str | None:
    """The CustomAttributes that tell an endpoint's server what a job's environment ``env``
    tells a job's (:func:`dialect_environment`, and the Parquet join, JOIN_SOURCE_VAR);
    None when there is nothing to tell. ValidationError when they would be longer than
    InvokeEndpoint allows."""
    columns = columns_from_environment(env)
    delimiter = delimiter_from_environment(env)
    join = env.get(JOIN_SOURCE_VAR) == "Input"
    if columns is None and delimiter == DEFAULT_DELIMITER and not join:
        return None
    told: dict[str, Any] = {"columns": columns, "delimiter": delimiter}
    if join:
        told["join_source"] = "Input"
    value = ATTRIBUTES_PREFIX + json.dumps(told, separators=(",", ":"))  # ASCII escapes
    if len(value) > MAX_CUSTOM_ATTRIBUTES:
        raise ValidationError(
            f"the header's names take {len(value)} characters in an endpoint request's "
            f"CustomAttributes, which hold at most {MAX_CUSTOM_ATTRIBUTES}; score these "
            "inputs with a transform or processing job, whose environment holds them"
        )
    return value


def attributes_of(value: str | None) -> RequestAttributes | None:
    """What a request's CustomAttributes written by :func:`custom_attributes` tell, or None
    when they hold nothing of batchinfer's."""
    if not value or not value.startswith(ATTRIBUTES_PREFIX):
        return None
    try:
        told = json.loads(value[len(ATTRIBUTES_PREFIX) :])
        columns, delimiter = told["columns"], check_delimiter(told["delimiter"])
        join = told.get("join_source")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValidationError(
            f"{CUSTOM_ATTRIBUTES_HEADER}: not a batchinfer dialect: {exc}"
        ) from None
    if columns is not None and not (
        isinstance(columns, list) and all(isinstance(c, str) for c in columns)
    ):
        raise ValidationError(f"{CUSTOM_ATTRIBUTES_HEADER}: columns must be a list of names")
    if join not in (None, "Input"):
        raise ValidationError(f"{CUSTOM_ATTRIBUTES_HEADER}: join_source must be 'Input'")
    return RequestAttributes(columns, delimiter, join == "Input")


def with_table(
    transform: Mapping[str, Any], delimiter: str | None, encoding: str | None
) -> dict[str, Any]:
    """The settings keys ``transform`` with ``delimiter`` (``--delimiter``) in the model's
    environment and ``encoding`` (``--encoding``) as the content type's charset."""
    table = dict(transform)
    if encoding is not None:
        table["content_type"] = with_charset(table.get("content_type"), encoding)
    if delimiter is not None:
        dialect = dialect_environment(None, check_delimiter(delimiter))
        table["environment"] = {**table.get("environment", {}), **dialect}
    return table
