"""The run request as a console user, a schedule, the S3 trigger or ``batchinfer submit``
gives it: ``input`` and optional snake_case keys. The checks here need neither the stack nor
AWS, so ``batchinfer submit`` runs them before it starts anything and Plan runs them first;
a bad request fails with a message naming the key.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from batchinfer.endpoints.targets import ENDPOINT_NAME
from batchinfer.engines import PIPELINE_ENGINES
from batchinfer.errors import ValidationError
from batchinfer.pipeline.jobs.run_estimate import ESTIMATE_KEY, EstimateRequest, estimate_request
from batchinfer.pipeline.jobs.run_model import MODEL_KEYS
from batchinfer.sharding.selection import InputSelection
from batchinfer.transform.settings import TransformSettings
from batchinfer.uris import parse_s3_uri

ENDPOINT_KEYS = ("endpoint", "endpoint_variant", "inference_component")
SELECTION_KEYS = ("include", "exclude")
RUN_KEYS = (
    frozenset(
        {"input", "names", "output", "run_id", "engine", "shards", "shard_size", "header", "merge"}
    )
    | frozenset(SELECTION_KEYS)
    | frozenset({ESTIMATE_KEY, *MODEL_KEYS})
    | frozenset(ENDPOINT_KEYS)
)
REQUEST_KEYS = RUN_KEYS | TransformSettings.request_keys()
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


@dataclass(frozen=True)
class RunRequest:
    """A run request, checked as far as it can be without the stack or AWS (:meth:`parse`):
    the keys, the run id, input and output as S3 URIs, the names and the globs that select
    the inputs, the engine, the endpoint keys, the flags, each transform setting given and
    the estimate. Which places and models the stack allows, settings that must agree with
    each other and the sharding depend on the stack: Plan checks those."""

    given: Mapping[str, Any]  # the request as it came
    input: str
    output: str | None
    run_id: str | None
    names: tuple[str, ...] | None  # None: every object under input
    selection: InputSelection  # include and exclude globs
    engine: str | None  # None: the stack's
    endpoint: dict[str, str]  # the endpoint keys given
    header: bool
    merge: bool
    settings: dict[str, Any]  # the transform settings given, by request key
    estimate: EstimateRequest

    @classmethod
    def parse(cls, request: Any) -> "RunRequest":
        """``request`` checked; ValidationError naming the key at fault."""
        _check_keys(request)
        run_id = _check_run_id(request["run_id"]) if "run_id" in request else None
        source = _s3_uri(request.get("input"), "input")
        output = request.get("output")
        if output is not None:
            _s3_uri(output, "output")
        names = _names(request)
        selection = InputSelection(*(_globs(request, key) for key in SELECTION_KEYS))
        engine = engine_of(request["engine"]) if "engine" in request else None
        endpoint = {key: request[key] for key in ENDPOINT_KEYS if key in request}
        check_endpoint_keys(endpoint, engine)
        header, merge = _flag(request, "header"), _flag(request, "merge")
        settings = {key: value for key, value in request.items() if key not in RUN_KEYS}
        TransformSettings.check_given(settings)
        estimate = estimate_request(request)
        return cls(
            request, source, output, run_id, names, selection, engine, endpoint, header, merge,
            settings, estimate,
        )  # fmt: skip

    def run_id_or(self, execution_name: str) -> str:
        """The run's id: the request's ``run_id``, else the execution's name."""
        return run_id_of(self.given, execution_name)


def _s3_uri(uri: Any, field: str) -> str:
    if not isinstance(uri, str):
        raise ValidationError(f"{field}: required, an s3:// URI")
    parse_s3_uri(uri, field=field)
    return uri


def _check_keys(request: Any) -> None:
    if not isinstance(request, Mapping):
        raise ValidationError(
            f'request: expected an object such as {{"input": "s3://..."}}, got {request!r}'
        )
    unknown = sorted(set(request) - REQUEST_KEYS)
    if unknown:
        raise ValidationError(
            f"request: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(REQUEST_KEYS))}"
        )


def engine_of(engine: Any) -> str:
    if engine not in PIPELINE_ENGINES:
        raise ValidationError(
            f"engine: {engine!r} is not allowed; allowed: {', '.join(PIPELINE_ENGINES)}"
        )
    return engine


def check_endpoint_keys(given: Mapping[str, Any], engine: str | None) -> None:
    """The endpoint keys ``given``: only the endpoint engine (or an engine not yet known,
    None) takes them, each an endpoint, variant or component name."""
    if given and engine not in (None, "endpoint"):
        raise ValidationError(
            f"{next(iter(given))}: only with engine endpoint, not engine {engine!r}"
        )
    for key, value in given.items():
        if not isinstance(value, str) or not ENDPOINT_NAME.fullmatch(value):
            raise ValidationError(
                f"{key}: {value!r} is not allowed; allowed: 1-63 letters, digits and hyphens, "
                "starting with a letter or digit"
            )


def run_id_of(request: Mapping[str, Any], execution_name: str) -> str:
    """The request's ``run_id``, else the execution's name, checked (also for a request
    that is otherwise bad, whose failure is recorded under it)."""
    return _check_run_id(request.get("run_id", execution_name))


def _check_run_id(run_id: Any) -> str:
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise ValidationError(
            f"run_id: {run_id!r} is not allowed; allowed: 1-80 letters, digits, '.', '_' or "
            "'-', starting with a letter or digit"
        )
    return run_id


def _names(request: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The request's ``names`` (object paths relative to ``input``), or None: every object
    under ``input``."""
    names = request.get("names")
    if names is None:
        return None
    if not isinstance(names, list) or not names:
        raise ValidationError(
            f"names: {names!r} is not allowed; allowed: a non-empty list of object paths "
            "relative to input"
        )
    seen = set()
    for number, name in enumerate(names):
        if not isinstance(name, str) or not name or name.endswith("/"):
            raise ValidationError(
                f"names[{number}]: {name!r} is not an object path relative to input"
            )
        if name in seen:
            raise ValidationError(f"names[{number}]: {name!r} is named twice")
        seen.add(name)
    return tuple(names)


def _globs(request: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The request's ``include`` or ``exclude``: glob patterns matched against each input's
    name relative to ``input`` (none when it is left out)."""
    globs = request.get(key, [])
    if not isinstance(globs, list):
        raise ValidationError(
            f'{key}: {globs!r} is not allowed; allowed: a list of glob patterns such as ["*.csv"]'
        )
    for number, glob in enumerate(globs):
        if not isinstance(glob, str) or not glob:
            raise ValidationError(f"{key}[{number}]: {glob!r} is not a glob pattern")
    return tuple(globs)


def _flag(request: Mapping[str, Any], key: str) -> bool:
    value = request.get(key, False)
    if not isinstance(value, bool):
        raise ValidationError(f"{key}: {value!r} is not allowed; allowed: true or false")
    return value
