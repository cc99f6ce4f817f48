"""What a transform job request says, validated as CreateTransformJob does (R1: a request outside
CreateTransformJob's limits is refused; R2: each enum field takes only its listed values; R15;
R16: the filters take a small subset of JSONPath; R20: ModelClientConfig bounds timeouts and
retries), with the R10 precedence of batch settings and the R21/C6 container environment (R21:
the model's Environment, then the job's, then the variables the platform sets; C6: the platform
sets SAGEMAKER_BATCH and the job's batch values).

Every error names the field as ``snake_name (PascalName)``, the bad value and what is allowed.
Standard library only: the Plan Lambda and the processing container import this module.
"""

import difflib
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.media_types import CSV, JSON, JSONLINES, PARQUET, codec_type, media_type
from batchinfer.transform import jsonpath
from batchinfer.transform.bad_records import MAX_BAD_RECORDS_VAR, NO_LIMIT
from batchinfer.units import MIB

# Answer types that hold one line per record, so output records can be counted (R17: a CSV join adds
# the prediction to its row, one line per record).
LINE_ANSWERS = frozenset({CSV, JSONLINES})
# "Input": the model server answers a Parquet request with its columns and the predictions'
# (a join SageMaker's DataProcessing cannot make: it joins CSV and JSON only).
JOIN_SOURCE_VAR = "BATCHINFER_JOIN_SOURCE"

# snake_case key -> CreateTransformJob field name (the last two are batchinfer's own: the
# records of a file set aside rather than fail it, sent in the model's environment).
PASCAL = {
    "content_type": "ContentType",
    "accept": "Accept",
    "split_type": "SplitType",
    "batch_strategy": "BatchStrategy",
    "max_payload_mb": "MaxPayloadInMB",
    "max_concurrent_transforms": "MaxConcurrentTransforms",
    "assemble_with": "AssembleWith",
    "join_source": "JoinSource",
    "input_filter": "InputFilter",
    "output_filter": "OutputFilter",
    "compression_type": "CompressionType",
    "instance_count": "InstanceCount",
    "instance_type": "InstanceType",
    "invocations_timeout_seconds": "InvocationsTimeoutInSeconds",
    "invocations_max_retries": "InvocationsMaxRetries",
    "environment": "Environment",
    "bad_records": "BadRecords",
    "max_bad_records": "MaxBadRecords",
}

# R2 enums.
ENUMS: dict[str, tuple[str, ...]] = {
    "split_type": ("None", "Line", "RecordIO", "TFRecord"),
    "batch_strategy": ("MultiRecord", "SingleRecord"),
    "assemble_with": ("None", "Line"),
    "join_source": ("None", "Input"),
    "compression_type": ("None", "Gzip"),
    "bad_records": ("fail", "quarantine"),
}
# Inclusive ranges (R1, R20).
RANGES: dict[str, tuple[int, int | None]] = {
    "max_payload_mb": (0, 100),
    "max_concurrent_transforms": (1, None),
    "instance_count": (1, 100),
    "invocations_timeout_seconds": (1, 3600),
    "invocations_max_retries": (0, 3),
    "max_bad_records": (0, NO_LIMIT),
}
MAX_PAYLOAD_X_CONCURRENCY_MB = 100
MAX_FILTER_LENGTH = 63
MAX_ENVIRONMENT_ENTRIES = 16
MAX_ENVIRONMENT_VALUE_LENGTH = 10240
DEFAULT_MAX_CONCURRENT_TRANSFORMS = 1
DEFAULT_BATCH_STRATEGY = "MultiRecord"
DEFAULT_MAX_PAYLOAD_MB = 6

_ENV_KEY = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]{0,1023}")
_JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
_DATA_PROCESSING_TYPES = (CSV, JSON, JSONLINES)
# The container's /execution-parameters spellings of BatchStrategy (R10, C5: the container may
# answer batch settings on /execution-parameters; C6).
_STRATEGY_SPELLINGS = {
    "MultiRecord": "MultiRecord",
    "MULTI_RECORD": "MultiRecord",
    "SingleRecord": "SingleRecord",
    "SINGLE_RECORD": "SingleRecord",
}
_CONTAINER_STRATEGY = {"MultiRecord": "MULTI_RECORD", "SingleRecord": "SINGLE_RECORD"}


def label(key: str) -> str:
    """``max_payload_mb (MaxPayloadInMB)``: how errors name a field."""
    return f"{key} ({PASCAL[key]})"


def validate_job_name(name: str) -> str:
    """Return ``name`` if it is a valid transform job name (R1), else raise ValidationError."""
    if not isinstance(name, str) or not 1 <= len(name) <= 63 or not _JOB_NAME.fullmatch(name):
        raise ValidationError(
            f"job_name (TransformJobName): {name!r} is not a valid job name; allowed: 1-63 "
            "letters, digits and hyphens, starting and ending with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class EffectiveSettings:
    """The batch settings in force after R10 precedence."""

    batch_strategy: str
    max_payload_mb: int
    max_concurrent_transforms: int

    @property
    def max_payload_bytes(self) -> int | None:
        """The request body limit in bytes; None when MaxPayloadInMB is 0 (no limit, R8: a record
        larger than MaxPayloadInMB fails its file)."""
        return self.max_payload_mb * MIB or None


@dataclass(frozen=True)
class TransformSettings:
    """The transform settings of a job request; None means "not set in the job".

    Build them with :meth:`from_request` (validated: every error names the field) or read
    them back from the pipeline's state with :meth:`from_state`; the bare constructor
    checks nothing."""

    content_type: str | None = None
    accept: str | None = None
    split_type: str = "None"
    batch_strategy: str | None = None
    max_payload_mb: int | None = None
    max_concurrent_transforms: int | None = None
    assemble_with: str = "None"
    join_source: str = "None"
    input_filter: str = "$"
    output_filter: str = "$"
    compression_type: str = "None"
    instance_count: int = 1
    instance_type: str = "ml.m5.xlarge"
    invocations_timeout_seconds: int = 600
    invocations_max_retries: int = 3
    environment: Mapping[str, str] = field(default_factory=dict)
    bad_records: str = "fail"
    max_bad_records: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.environment, Mapping):
            object.__setattr__(self, "environment", dict(self.environment))

    def validate(self, *, combined: bool = True) -> "TransformSettings":
        """These settings, if CreateTransformJob would accept them; else ValidationError
        naming every field at fault. ``combined=False`` leaves out the R15 checks of fields
        that must agree with each other (data processing)."""
        if not isinstance(self.environment, Mapping):
            raise ValidationError(
                f"{label('environment')}: {self.environment!r} is not an object of string "
                "keys and string values"
            )
        problems = _type_problems(self)
        if not problems:
            problems = _value_problems(self)
            if combined:
                problems += _data_processing_problems(self) + _parquet_problems(self)
                problems += _bad_records_problems(self)
        if problems:
            raise ValidationError("; ".join(problems))
        return self

    def to_state(self) -> dict[str, Any]:
        """Every field, as JSON values (the pipeline's state and records carry these)."""
        return asdict(self)

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "TransformSettings":
        """Settings that :meth:`to_state` wrote after :meth:`from_request` validated them:
        read back as they are, not validated again."""
        return cls(**state)

    @classmethod
    def request_keys(cls) -> frozenset[str]:
        """The snake_case keys a request may carry for these settings."""
        return frozenset(f.name for f in fields(cls))

    @classmethod
    def from_request(
        cls, request: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
    ) -> "TransformSettings":
        """Build from snake_case keys (a state machine input or config); ``defaults`` (e.g.
        the stack config) fill keys the request leaves out or sets to null.

        Enum values are matched ignoring case and underscores (``multi_record`` ->
        ``MultiRecord``). Unknown keys and enum values are errors that suggest the closest
        known one.
        """
        return cls(**_merged(request, defaults)).validate()

    @classmethod
    def check_given(cls, request: Mapping[str, Any]) -> None:
        """Check each setting ``request`` gives as :meth:`from_request` does, but not the
        settings that must agree with each other (R15): the defaults (a stack's) that the
        request will be merged with may make them agree."""
        cls(**_merged(request, None)).validate(combined=False)

    @cached_property
    def input_path(self) -> jsonpath.JsonPath:
        """The parsed InputFilter (R16), parsed once per settings."""
        return jsonpath.parse(self.input_filter, field=label("input_filter"))

    @cached_property
    def output_path(self) -> jsonpath.JsonPath:
        """The parsed OutputFilter (R16), parsed once per settings."""
        return jsonpath.parse(self.output_filter, field=label("output_filter"))

    @property
    def counts_records(self) -> bool:
        """True when output records can be counted against input records (R17, R19: a file with any
        failed record gets no output): see :attr:`records_not_counted`."""
        return self.records_not_counted is None

    @property
    def records_not_counted(self) -> str | None:
        """Why output records cannot be counted against input records, or None when they
        can: SplitType and AssembleWith are both Line and the answer is one line per record,
        which CSV and JSON Lines answers are, and so is a join (R17, R18: a JSON join puts the
        prediction under SageMakerOutput). Any other answer (one JSON document per request, NumPy)
        is written as the model gives it (R13: AssembleWith decides what goes between responses).
        The answer's type is Accept, else the request's ContentType (the default handler answers in
        it), else CSV."""
        if self.parquet_in and self.answers_parquet:
            return None  # rows, from each file's footer
        if self.split_type != "Line" or self.assemble_with != "Line":
            return (
                "output records are counted only with SplitType Line and AssembleWith Line, "
                "or Parquet in and out"
            )
        if self.join_source == "Input":
            return None
        answer = codec_type(self.accept) or codec_type(self.content_type) or CSV
        if answer in LINE_ANSWERS:
            return None
        return (
            f"with Accept {answer} an answer is not one line per record "
            "(only CSV, JSON Lines and joined answers are)"
        )

    @property
    def parquet_in(self) -> bool:
        """True when the input is Parquet: each request a whole Parquet file (a file, or a
        shard of its row groups), its records the file's rows."""
        return codec_type(self.content_type) == PARQUET

    @property
    def answers_parquet(self) -> bool:
        """True when the answer is Parquet (Accept, else the request's ContentType)."""
        return (codec_type(self.accept) or codec_type(self.content_type)) == PARQUET

    @property
    def server_joins(self) -> bool:
        """True for a join of Parquet input and a Parquet answer, without filters: the model
        server makes it (the input's columns, then the predictions'), as SageMaker's
        DataProcessing joins CSV and JSON only (R17, R18)."""
        return (
            self.join_source == "Input"
            and self.parquet_in
            and self.answers_parquet
            and self.input_filter == self.output_filter == "$"
        )

    @property
    def uses_data_processing(self) -> bool:
        """True when a filter or a join applies (R15) that the platform makes (a Parquet join
        is the model server's: :attr:`server_joins`)."""
        if self.server_joins:
            return False
        return self.input_filter != "$" or self.output_filter != "$" or self.join_source != "None"

    def resolve(self, execution_parameters: Mapping[str, Any] | None = None) -> EffectiveSettings:
        """R10: the job's value, else the container's ``/execution-parameters``, else the
        defaults (1 concurrent transform, MultiRecord, 6 MB)."""
        container = dict(execution_parameters or {})
        strategy = container.get("BatchStrategy")
        if strategy is not None:
            if not isinstance(strategy, str) or strategy not in _STRATEGY_SPELLINGS:
                raise ValidationError(
                    f"container /execution-parameters BatchStrategy: {strategy!r} is not "
                    f"allowed; allowed: {', '.join(_STRATEGY_SPELLINGS)}"
                )
            strategy = _STRATEGY_SPELLINGS[strategy]
        for key in ("MaxPayloadInMB", "MaxConcurrentTransforms"):
            value = container.get(key)
            low, high = RANGES[_SNAKE[key]]
            if value is not None and (
                not _is_int(value) or value < low or (high is not None and value > high)
            ):
                allowed = f"{low}..{high}" if high is not None else f">= {low}"
                raise ValidationError(
                    f"container /execution-parameters {key}: {value!r} is not allowed; "
                    f"allowed: an integer {allowed}"
                )
        return EffectiveSettings(
            batch_strategy=_first(self.batch_strategy, strategy, DEFAULT_BATCH_STRATEGY),
            max_payload_mb=_first(
                self.max_payload_mb, container.get("MaxPayloadInMB"), DEFAULT_MAX_PAYLOAD_MB
            ),
            max_concurrent_transforms=_first(
                self.max_concurrent_transforms,
                container.get("MaxConcurrentTransforms"),
                DEFAULT_MAX_CONCURRENT_TRANSFORMS,
            ),
        )

    @property
    def bad_record_allowance(self) -> int | None:
        """The most records of a file set aside (``bad_records`` quarantine; NO_LIMIT when
        ``max_bad_records`` is not set), or None: a refused record fails its file."""
        if self.bad_records != "quarantine":
            return None
        return NO_LIMIT if self.max_bad_records is None else self.max_bad_records

    @property
    def job_environment(self) -> dict[str, str]:
        """The job's Environment as the platform is sent it: the settings' own, the Parquet
        join the model server makes (:attr:`server_joins`), and the records it may set
        aside (:attr:`bad_record_allowance`)."""
        env = dict(self.environment)
        if self.server_joins:
            env[JOIN_SOURCE_VAR] = "Input"
        if self.bad_record_allowance is not None:
            env[MAX_BAD_RECORDS_VAR] = str(self.bad_record_allowance)
        return env

    def container_environment(
        self, model_environment: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """R21/C6: the model's Environment, then the job's (:attr:`job_environment`), then
        the SAGEMAKER_* variables (the batch ones only for values the job sets)."""
        model = dict(model_environment or {})
        if self.bad_record_allowance is None:  # a model's own would mark records aside
            model.pop(MAX_BAD_RECORDS_VAR, None)
        env = {**model, **self.job_environment, "SAGEMAKER_BATCH": "true"}
        if self.max_payload_mb is not None:
            env["SAGEMAKER_MAX_PAYLOAD_IN_MB"] = str(self.max_payload_mb)
        if self.batch_strategy is not None:
            env["SAGEMAKER_BATCH_STRATEGY"] = _CONTAINER_STRATEGY[self.batch_strategy]
        if self.max_concurrent_transforms is not None:
            env["SAGEMAKER_MAX_CONCURRENT_TRANSFORMS"] = str(self.max_concurrent_transforms)
        return env


_SNAKE = {pascal: snake for snake, pascal in PASCAL.items()}
_STR_FIELDS = (
    "content_type",
    "accept",
    "split_type",
    "batch_strategy",
    "assemble_with",
    "join_source",
    "input_filter",
    "output_filter",
    "compression_type",
    "instance_type",
    "bad_records",
)
_INT_FIELDS = tuple(RANGES)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _type_problems(s: TransformSettings) -> list[str]:
    problems = []
    for key in _STR_FIELDS:
        value = getattr(s, key)
        if value is not None and not isinstance(value, str):
            problems.append(f"{label(key)}: {value!r} is not a string")
    for key in _INT_FIELDS:
        value = getattr(s, key)
        if value is not None and not _is_int(value):
            problems.append(f"{label(key)}: {value!r} is not an integer")
    for env_key, env_value in s.environment.items():
        if not isinstance(env_key, str) or not isinstance(env_value, str):
            problems.append(
                f"{label('environment')}: entry {env_key!r}: {env_value!r} must map a string "
                "to a string"
            )
    return problems


def _value_problems(s: TransformSettings) -> list[str]:
    problems = []
    for key, allowed in ENUMS.items():
        value = getattr(s, key)
        if value is not None and value not in allowed:
            meant = _closest(value, {choice: choice for choice in allowed})
            hint = f"did you mean {meant!r}? " if meant else ""
            problems.append(
                f"{label(key)}: {value!r} is not allowed; {hint}allowed: {', '.join(allowed)}"
            )
    for key, (low, high) in RANGES.items():
        value = getattr(s, key)
        if value is not None and (value < low or (high is not None and value > high)):
            bounds = f"{low}..{high}" if high is not None else f">= {low}"
            problems.append(f"{label(key)}: {value} is out of range; allowed: {bounds}")
    if (
        s.max_payload_mb is not None
        and s.max_concurrent_transforms is not None
        and s.max_payload_mb * s.max_concurrent_transforms > MAX_PAYLOAD_X_CONCURRENCY_MB
    ):
        problems.append(
            f"{label('max_concurrent_transforms')} x {label('max_payload_mb')}: "
            f"{s.max_concurrent_transforms} x {s.max_payload_mb} = "
            f"{s.max_concurrent_transforms * s.max_payload_mb} MB; allowed: at most 100"
        )
    if not s.instance_type.startswith("ml."):
        problems.append(
            f"{label('instance_type')}: {s.instance_type!r} is not a SageMaker instance type; "
            "allowed: names starting with 'ml.', e.g. ml.m5.xlarge"
        )
    problems += _environment_problems(s.environment)
    problems += _filter_problems(s)
    return problems


def _environment_problems(environment: Mapping[str, str]) -> list[str]:
    problems = []
    if len(environment) > MAX_ENVIRONMENT_ENTRIES:
        problems.append(f"{label('environment')}: {len(environment)} entries; allowed: at most 16")
    for key, value in environment.items():
        if not _ENV_KEY.fullmatch(key):
            problems.append(
                f"{label('environment')}: key {key!r} is not allowed; allowed: a letter or _ "
                "then up to 1023 letters, digits or _"
            )
        if len(value) > MAX_ENVIRONMENT_VALUE_LENGTH:
            problems.append(
                f"{label('environment')}: value of {key!r} has {len(value)} characters; "
                "allowed: at most 10240"
            )
    return problems


_FILTERS = (("input_filter", "input_path"), ("output_filter", "output_path"))


def _filter_problems(s: TransformSettings) -> list[str]:
    """R1 filter length and R16 filter syntax."""
    problems = []
    for key, parsed in _FILTERS:
        expression = getattr(s, key)
        if len(expression) > MAX_FILTER_LENGTH:
            problems.append(
                f"{label(key)}: {expression!r} has {len(expression)} characters; "
                "allowed: at most 63"
            )
            continue
        try:
            getattr(s, parsed)
        except ValidationError as exc:
            problems.append(str(exc))
    return problems


def _parquet_problems(s: TransformSettings) -> list[str]:
    """Parquet is framed whole: a request is a whole Parquet file, and so is an answer."""
    problems = []
    if s.parquet_in and s.split_type != "None":
        problems.append(
            f"{label('split_type')}: {s.split_type!r}; Parquet input ({label('content_type')} "
            f"{s.content_type!r}) is not made of lines: each file is sent whole, as one "
            "request; set 'None'"
        )
    if s.answers_parquet and s.assemble_with != "None":
        problems.append(
            f"{label('assemble_with')}: {s.assemble_with!r}; a Parquet answer is a whole "
            "Parquet file, which a newline after it would break; set 'None'"
        )
    return problems


def _bad_records_problems(s: TransformSettings) -> list[str]:
    """Records are set aside one line each, by the model server's answer line in their
    place: quarantine needs lines in and out, untouched by a join or an OutputFilter."""
    problems = []
    if MAX_BAD_RECORDS_VAR in s.environment:
        problems.append(
            f"{label('environment')}: {MAX_BAD_RECORDS_VAR} is set by {label('bad_records')} "
            f"and {label('max_bad_records')}; set those instead"
        )
    if s.bad_records != "quarantine":  # max_bad_records, a default's maybe, does not apply
        return problems
    needs = []
    if s.split_type != "Line" or s.assemble_with != "Line":
        needs.append("split_type and assemble_with Line")
    if codec_type(s.content_type) not in LINE_ANSWERS:
        needs.append(f"content_type {CSV} or {JSONLINES}")
    elif (codec_type(s.accept) or codec_type(s.content_type)) not in LINE_ANSWERS:
        needs.append(f"an answer (accept) in {CSV} or {JSONLINES}")
    if s.join_source != "None" or s.output_filter != "$":
        needs.append("no join_source nor output_filter (they rewrite each answer line)")
    if len(s.environment) >= MAX_ENVIRONMENT_ENTRIES:
        needs.append(f"at most {MAX_ENVIRONMENT_ENTRIES - 1} environment entries (one is its own)")
    if needs:
        problems.append(
            f"{label('bad_records')}: 'quarantine' sets records aside one line each, so it "
            f"needs {'; '.join(needs)}"
        )
    return problems


def _data_processing_problems(s: TransformSettings) -> list[str]:
    """R15: the media types, split and assembly a filter or a join needs."""
    problems: list[str] = []
    if not s.uses_data_processing:
        return problems
    paths = {}
    for key, parsed in _FILTERS:
        try:
            paths[key] = getattr(s, parsed)
        except ValidationError:  # reported by _filter_problems
            continue
    join = s.join_source == "Input"
    # (side is used, settings key of its media type, filter key)
    sides = (
        (s.input_filter != "$" or join, "content_type", "input_filter"),
        (s.output_filter != "$" or join, "accept", "output_filter"),
    )
    needs_lines = False
    for used, type_key, filter_key in sides:
        kind = media_type(getattr(s, type_key))
        if not used:
            continue
        if kind not in _DATA_PROCESSING_TYPES:
            value = getattr(s, type_key)
            problems.append(
                f"{label(type_key)}: {'not set' if value is None else repr(value)}; "
                f"{'a join' if join else 'a filter'} (DataProcessing) needs one of "
                f"{', '.join(_DATA_PROCESSING_TYPES)}"
            )
        elif kind == CSV:
            needs_lines = True
            path = paths.get(filter_key)
            if path is not None and path.uses_names:
                problems.append(
                    f"{label(filter_key)}: {path.expression!r} selects keys, but CSV rows are "
                    "arrays; allowed: index paths such as $[1:] or $[0,-1]"
                )
    if needs_lines and (s.split_type != "Line" or s.assemble_with != "Line"):
        problems.append(
            f"{label('split_type')} and {label('assemble_with')}: {s.split_type!r} and "
            f"{s.assemble_with!r}; CSV data processing needs both to be 'Line'"
        )
    if join:
        if media_type(s.accept) != media_type(s.content_type):
            problems.append(
                f"{label('accept')}: {s.accept!r} differs from {label('content_type')} "
                f"{s.content_type!r}; a join (JoinSource Input) needs them equal"
            )
        if s.assemble_with != s.split_type:
            problems.append(
                f"{label('assemble_with')}: {s.assemble_with!r} differs from "
                f"{label('split_type')} {s.split_type!r}; a join (JoinSource Input) needs "
                "them equal"
            )
    return problems


def _merged(request: Mapping[str, Any], defaults: Mapping[str, Any] | None) -> dict[str, Any]:
    """``defaults`` then ``request``, without nulls, enum values in their canonical spelling."""
    merged: dict[str, Any] = {}
    for source, mapping in (("defaults", defaults or {}), ("request", request)):
        if not isinstance(mapping, Mapping):
            raise ValidationError(f"{source}: expected an object of settings, got {mapping!r}")
        for key, value in mapping.items():
            if key not in PASCAL:
                raise ValidationError(f"{source}: unknown key {key!r}{_suggestion(key)}")
            if value is not None:
                merged[key] = _canonical_enum(key, value)
    return merged


def _canonical_enum(key: str, value: Any) -> Any:
    if key not in ENUMS or not isinstance(value, str):
        return value
    folded = value.replace("_", "").lower()
    return next((a for a in ENUMS[key] if a.lower() == folded), value)


def _closest(word: str, spellings: Mapping[str, str]) -> str | None:
    """What ``word`` most likely means: the choice whose spelling (a key of ``spellings``,
    which maps each spelling to its choice) equals it ignoring case, ``_`` and ``-``, else
    the closest one (difflib); None when none is close."""
    folded = {_fold(spelling): choice for spelling, choice in spellings.items()}
    near = difflib.get_close_matches(_fold(word), list(folded), n=1)
    return folded.get(_fold(word)) or (folded[near[0]] if near else None)


def _fold(text: str) -> str:
    return text.replace("_", "").replace("-", "").lower()


def _suggestion(key: str) -> str:
    meant = _closest(str(key), {k: k for k in PASCAL} | {p: k for k, p in PASCAL.items()})
    known = ", ".join(sorted(PASCAL))
    if meant:
        return f"; did you mean {meant!r}? known keys: {known}"
    return f"; known keys: {known}"


def _first(*values: Any) -> Any:
    return next(v for v in values if v is not None)
