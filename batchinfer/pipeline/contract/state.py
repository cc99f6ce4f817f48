"""What the state machine carries from step to step, typed.

The execution's state is JSON: the request at ``$``, then ``$.plan`` (:class:`RunPlan`,
written by Plan), ``$.round`` (:class:`Round`, by Collect and Verify), ``$.job`` (a
:class:`JobRequest` from PrepareJob, then the job task's :class:`JobOutcome`),
``$.admission`` (:class:`Admission`, by AcquireInstances and ReleaseInstances around each
job), ``$.counts`` (where the CountShards Map's results are), ``$.result`` (:class:`RunEnd`,
by Finalize) and ``$.failure`` (:class:`Failure`, by RecordFailure). The split Map's items
are :class:`SplitTask` objects in S3 and each SplitObject answers a :class:`SplitResult`;
each item of the MergeOutputs Map is a :class:`MergeTask`;
each item of the CountShards Map is a :class:`ShardCheck` and CountShard answers a
:class:`ShardCount`.

Each class reads its part of the state with ``from_state`` and writes it with
``to_state``; the handlers of ``lambda/`` do nothing else with the state. Settings are
validated once, by Plan, and then carried as they are (:meth:`TransformSettings.from_state`).
Standard library only.
"""

import json
from dataclasses import Field, asdict, dataclass, fields
from typing import Any, ClassVar, Self

from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.layout import RunLayout
from batchinfer.transform.settings import TransformSettings
from batchinfer.units import parse_size
from batchinfer.uris import is_s3_uri, parse_s3_uri


class StatePart:
    """A frozen dataclass written to the state as its fields (JSON values) and read back
    from the keys named as its fields (others are ignored)."""

    # What @dataclass gives each subclass (declared only, for the type checker).
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def to_state(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_state(cls, state: Any) -> Self:
        return cls(**cls._fields_in(state))

    @classmethod
    def _fields_in(cls, state: dict[str, Any]) -> dict[str, Any]:
        names = (f.name for f in fields(cls))
        return {name: state[name] for name in names if name in state}


@dataclass(frozen=True)
class RunPlan(StatePart):
    """What Plan decided for a run (``$.plan``); every later step reads it."""

    run_id: str
    engine: str
    input: str
    output: str
    job_output: str  # where jobs write: the output prefix, or the parts of a merged run
    artefacts: str
    shards_prefix: str
    inputs_key: str  # the split Map's items (JSON Lines), a key in the data bucket
    objects: int
    bytes: int
    # Validated by Plan, without the container environment: that can hold up to 180 KB, so
    # it is in S3 at ``environment_uri`` and in the state only once, in the job request.
    settings: TransformSettings
    merge: bool
    max_rounds: int
    job_base: str
    environment_uri: str | None = None
    # The run's own model (run_model.py), created by Plan and deleted when the run ends;
    # None: the stack's model.
    model_name: str | None = None
    model_data_url: str | None = None
    # The endpoint engine's target (endpoints.EndpointTarget): its name, and the production
    # variant or inference component the requests go to, if any.
    endpoint: dict[str, str | None] | None = None

    @property
    def layout(self) -> RunLayout:
        return RunLayout(parse_s3_uri(self.artefacts).bucket, self.run_id)

    @classmethod
    def from_state(cls, state: Any) -> "RunPlan":
        settings = TransformSettings.from_state(state["settings"])
        return cls(**cls._fields_in(state) | {"settings": settings})


@dataclass(frozen=True)
class Round(StatePart):
    """One round of jobs (``$.round``): its ManifestFile of the shards still without a
    valid output (spec R4: a key prefix or a ManifestFile selects the input objects), whether
    every shard is done, and how long the run waits before the round (WaitForCapacity)."""

    number: int
    manifest: str
    complete: bool
    shards: int
    missing: int
    shards_key: str  # the round's shards (JSON Lines), a key in the data bucket
    # Seconds to wait before the round's job: set when the last job failed for want of
    # capacity (limits.capacity_wait_seconds), else 0.
    wait_seconds: int = 0


@dataclass(frozen=True)
class JobRequest(StatePart):
    """One job attempt as PrepareJob made it (``$.job``): a new name (R1: a request outside
    CreateTransformJob's limits is refused), the engine, and the Create*Job request whose fields the
    job task copies."""

    name: str
    engine: str
    data_processing: bool
    request: dict[str, Any]


JOB_STOPPED = "Stopped"  # TransformJobStatus / ProcessingJobStatus of a stopped job
# FailureReason prefixes of a job that failed because of its data or code, not its
# infrastructure: the container refused records (transform) or exited non-zero on them
# (processing). Retrying cannot help (docs/errors.md).
DATA_FAILURE_PREFIXES = ("ClientError", "AlgorithmError")
# A job SageMaker could not find instances for: its FailureReason begins with CapacityError
# (https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_capacity.html).
# The next round waits before it starts.
CAPACITY_FAILURE_PREFIX = "CapacityError"


# Step Functions cuts a task failure's Cause at this many characters (TaskFailedEventDetails,
# https://docs.aws.amazon.com/step-functions/latest/apireference/API_TaskFailedEventDetails.html):
# a Describe*Job response with a large container environment no longer parses whole.
CAUSE_LIMIT = 32_768
_DESCRIBED = (
    "TransformJobName",
    "ProcessingJobName",
    "TransformJobStatus",
    "ProcessingJobStatus",
    "FailureReason",
    "ExitMessage",
    "StoppingCondition",
    "CreationTime",
    "ProcessingEndTime",
)


def _fields_of_cut_json(cause: str) -> dict[str, Any] | None:
    """The job's name, status, reason and runtime from a Describe*Job response cut at
    CAUSE_LIMIT: each of these top-level fields before the cut, None when there is none."""
    if len(cause) < CAUSE_LIMIT or not cause.startswith("{"):
        return None
    decoder = json.JSONDecoder()
    found = {}
    for key in _DESCRIBED:
        at = cause.find(f'"{key}":')
        if at < 0:
            continue
        start = at + len(key) + 3
        while start < len(cause) and cause[start] == " ":
            start += 1
        try:
            value, _ = decoder.raw_decode(cause, start)
        except ValueError:  # the value itself was cut
            continue
        found[key] = value
    return found or None


def _runtime_limit(described: dict[str, Any]) -> int | None:
    """The MaxRuntimeInSeconds a stopped processing job ran to, None when it ended
    before: SageMaker stops a processing job that reaches it, and the job ends Stopped as
    one stopped by StopProcessingJob does
    (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProcessingStoppingCondition.html).
    Its time runs from CreationTime to ProcessingEndTime; timestamps come in epoch seconds
    or milliseconds, told apart by their size. Transform jobs have no runtime limit."""
    condition = described.get("StoppingCondition")
    limit = condition.get("MaxRuntimeInSeconds") if isinstance(condition, dict) else None
    created, ended = described.get("CreationTime"), described.get("ProcessingEndTime")
    if not (
        isinstance(limit, int)
        and isinstance(created, int | float)
        and isinstance(ended, int | float)
    ):
        return None
    scale = 1000 if created > 1e11 else 1  # epoch milliseconds
    return limit if (ended - created) / scale >= limit else None


@dataclass(frozen=True)
class JobOutcome(StatePart):
    """What a job attempt left at ``$.job``: ``{"name", "status"}`` when the task ended, or
    the ``Error``/``Cause`` a Catch recorded (the Cause of a Failed .sync job is its
    Describe*Job response, spec S2: a sync task waits for the job and returns its description)."""

    name: str | None
    status: str | None
    error: str | None = None
    reason: str | None = None
    # The MaxRuntimeInSeconds a Stopped processing job reached (None: stopped before it,
    # from outside the pipeline).
    runtime_limit: int | None = None

    def to_state(self) -> dict[str, Any]:
        if self.error is None:
            return {"name": self.name, "status": self.status}
        return {"Error": self.error, "Cause": self.reason or ""}

    @classmethod
    def from_state(cls, state: Any) -> "JobOutcome":
        if not isinstance(state, dict):
            return cls(None, None)
        if "Error" not in state:
            return cls(state.get("name"), state.get("status"))
        cause = state.get("Cause") or ""
        try:
            described = json.loads(cause)
        except ValueError:
            described = _fields_of_cut_json(cause)
        if not isinstance(described, dict):
            return cls(None, None, state["Error"], cause or None)
        name = described.get("TransformJobName") or described.get("ProcessingJobName")
        status = described.get("TransformJobStatus") or described.get("ProcessingJobStatus")
        reason = (
            described.get("FailureReason")
            or described.get("ExitMessage")
            or described.get("errorMessage")
            or cause
        )
        limit = _runtime_limit(described) if status == JOB_STOPPED else None
        if limit is not None:
            reason = (
                f"reached its runtime limit: SageMaker stopped it after its "
                f"MaxRuntimeInSeconds of {limit} (processing_max_runtime_hours)"
            )
        return cls(name, status, state["Error"], reason, limit)

    @property
    def data_failure(self) -> bool:
        """True when the job failed because of its data, not its infrastructure."""
        return self.error is not None and (self.reason or "").startswith(DATA_FAILURE_PREFIXES)

    @property
    def capacity_failure(self) -> bool:
        """True when SageMaker found no instances for the job: worth another round, later."""
        return self.error is not None and (self.reason or "").startswith(CAPACITY_FAILURE_PREFIX)

    @property
    def stopped_from_outside(self) -> bool:
        """True when the job ended Stopped before its runtime limit: a person (or the
        execution's own stop) stopped it, and the run stops too."""
        return self.status == JOB_STOPPED and self.runtime_limit is None

    def describe(self) -> str:
        what = f"job {self.name}" if self.name else "the job"
        if self.error is None:
            return f"{what} ended {self.status or 'without a status'}"
        return f"{what} failed ({self.error}): {self.reason or 'no reason given'}"


@dataclass(frozen=True)
class Admission(StatePart):
    """Whether the run holds its instances (``$.admission``): AcquireInstances answers
    ``granted`` (or not yet, and since when the run has waited), ReleaseInstances answers
    ``granted`` false once they are returned."""

    granted: bool
    instance_type: str
    instance_count: int
    in_use: int  # instances of the type leased when it was decided
    budget: int
    waiting_since: str | None = None


@dataclass(frozen=True)
class RunEnd(StatePart):
    """How a run ended: Finalize's result (``$.result``) and what a failure records; the
    run-finished event and the SNS message carry it."""

    run_id: str
    status: str
    output: str | None = None
    execution: str | None = None
    records_in: int | None = None
    records_out: int | None = None
    shards: int | None = None
    error: str | None = None
    cause: str | None = None
    failed_job: str | None = None
    failed_shards: list[str] | None = None
    # True when more shards may have failed than ``failed_shards`` names (it is cut).
    failed_shards_cut: bool | None = None
    # Records the model refused that were set aside (``bad_records`` quarantine), and the
    # first errors files that name them (``errors_files_cut``: there are more).
    records_quarantined: int | None = None
    errors_files: list[str] | None = None
    errors_files_cut: bool | None = None

    def to_state(self) -> dict[str, Any]:
        """The fields that are set."""
        return {key: value for key, value in asdict(self).items() if value is not None}


@dataclass(frozen=True)
class Failure(StatePart):
    """RecordFailure's answer (``$.failure``): the error and cause the execution fails with."""

    error: str
    cause: str


@dataclass(frozen=True)
class SplitTask(StatePart):
    """One item of the split Map (Plan writes one a line to ``inputs_key``): split ``input``
    into shards under ``output``, ``shards`` of them or about ``shard_size`` bytes each.
    ``splitter`` is who splits it, the SplitObject Lambda or a split job; a job's task also
    has ``job``: its name base, run id and container arguments (split_job.py)."""

    input: str
    output: str
    shards: int | None = None
    shard_size: int | None = None
    header: bool = False
    # The run's header line's digest (sharding.header): every object's must match it.
    header_sha256: str | None = None
    compression_type: str = "None"
    splitter: str = "lambda"
    job: dict[str, Any] | None = None
    # A Parquet object's rows, read by Plan from its footer: the split checks them.
    rows: int | None = None

    def to_state(self) -> dict[str, Any]:
        """The fields that are set. Each is a JSON value already, so Plan's line for each
        object needs none of the deep copy ``asdict`` makes (11-22 µs a task, 0.7 µs here)."""
        return {key: value for key, value in vars(self).items() if value is not None}

    @classmethod
    def from_state(cls, state: Any) -> "SplitTask":
        """Read an item, naming the key at fault (items come from an S3 object)."""
        unknown = sorted(set(state) - {f.name for f in fields(cls)})
        if unknown:
            raise ValidationError(f"split event: unknown key(s) {', '.join(unknown)}")
        for key in ("input", "output"):
            if not isinstance(state.get(key), str) or not is_s3_uri(state[key]):
                raise ValidationError(f"split event: {key} must be an s3:// URI")
        shards = state.get("shards")
        if shards is not None and (isinstance(shards, bool) or not isinstance(shards, int)):
            raise ValidationError(f"split event: shards must be an integer, not {shards!r}")
        size = state.get("shard_size")
        if isinstance(size, str):
            size = parse_size(size, field="shard_size")
        elif size is not None and (isinstance(size, bool) or not isinstance(size, int)):
            raise ValidationError(f"split event: shard_size must be a size, not {size!r}")
        header = state.get("header", False)
        if not isinstance(header, bool):
            raise ValidationError(f"split event: header must be true or false, not {header!r}")
        digest = state.get("header_sha256")
        if digest is not None and not isinstance(digest, str):
            raise ValidationError(f"split event: header_sha256 must be a string, not {digest!r}")
        splitter = state.get("splitter", "lambda")
        if splitter not in ("lambda", "job"):
            raise ValidationError(f"split event: splitter must be lambda or job, not {splitter!r}")
        job = state.get("job")
        if (job is not None) != (splitter == "job") or not isinstance(job or {}, dict):
            raise ValidationError("split event: job must be an object exactly when splitter is job")
        rows = state.get("rows")
        if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
            raise ValidationError(f"split event: rows must be an integer >= 0, not {rows!r}")
        return cls(
            state["input"],
            state["output"],
            shards,
            size,
            header,
            digest,
            state.get("compression_type", "None"),
            splitter,
            job,
            rows,
        )


@dataclass(frozen=True)
class SplitResult(StatePart):
    """What SplitObject answers for one object: where its shard index is, and its shards'
    names (relative to its folder) and sizes as ``[name, size]`` pairs when it has at most
    :data:`LISTED_SHARDS` of them (``shard_list``; None above: they stay in the index, a
    state holds at most 256 KB). Collect reads the lists from the split Map's result files
    rather than each object's index."""

    input: str
    index: str
    manifest: str
    shards: int
    source: str
    etag: str | None
    compression_type: str
    copied: bool
    shard_list: list[list[Any]] | None


# Shards a SplitResult lists: 64 names of at most 1,024 bytes each keep it near 66 KB.
LISTED_SHARDS = 64


@dataclass(frozen=True)
class MergeTask(StatePart):
    """One item of the MergeOutputs Map (a line of Plan's split tasks, with the plan): merge
    the shard outputs of ``input``, whose split wrote its index in ``folder``."""

    input: str
    folder: str
    plan: RunPlan

    @classmethod
    def from_state(cls, state: Any) -> "MergeTask":
        return cls(state["input"], state["folder"], RunPlan.from_state(state["plan"]))


@dataclass(frozen=True)
class ShardEntry:
    """One line of a run's shard list (``shards.jsonl``, written by Collect) and of a later
    round's list of missing shards: the items of the CountShards and ScoreShards Maps.
    ``number`` is the shard's SHARD item, ``name`` its key under the run's shard prefix,
    ``input_name`` its input object's path under the run's input (what its merged output is
    named after), ``size`` its bytes and ``compression`` its CompressionType."""

    number: int
    name: str
    input: str
    input_name: str
    size: int
    compression: str = "None"

    @classmethod
    def from_line(cls, line: Any, *, where: str = "shard list") -> "ShardEntry":
        """The entry a shard list's line holds; ValidationError naming ``where`` and the
        field at fault."""
        if not isinstance(line, dict) or not isinstance(line.get("name"), str):
            raise ValidationError(f"{where}: shard: {line!r} has no name")
        name = line["name"]
        for key, kind in (("number", int), ("input", str), ("input_name", str), ("size", int)):
            if not isinstance(line.get(key), kind) or isinstance(line.get(key), bool):
                raise ValidationError(f"{where}: shard {name}: {key} {line.get(key)!r} is missing")
        compression = line.get("compression", "None")
        if compression not in ("None", "Gzip"):
            raise ValidationError(
                f"{where}: shard {name}: compression {compression!r} is not None or Gzip"
            )
        return cls(
            line["number"], name, line["input"], line["input_name"], line["size"], compression
        )

    def to_line(self) -> dict[str, Any]:
        """The line's JSON object, its fields in order: a copy of the instance's own (scalar)
        fields, which Collect and Verify write once a shard (``asdict`` copies each value
        recursively, about 15 µs a shard)."""
        return dict(vars(self))

    @property
    def gzip(self) -> bool:
        return self.compression == "Gzip"


@dataclass(frozen=True)
class ShardCheck(StatePart):
    """One item of the CountShards Map: a shard of the round (a line of the round's shard
    list) and what its check needs of the plan."""

    shard: ShardEntry
    job_output: str
    shards_prefix: str
    settings: TransformSettings

    @classmethod
    def from_state(cls, state: Any) -> "ShardCheck":
        settings = TransformSettings.from_state(state["settings"])
        shard = ShardEntry.from_line(state["shard"], where="count event")
        return cls(**cls._fields_in(state) | {"settings": settings, "shard": shard})


@dataclass(frozen=True)
class ShardCount(StatePart):
    """What CountShard answers for one shard: the shard, its output, what is wrong with
    that output (None: it is valid) and, when counted and valid, ``records_in`` and
    ``records_out``."""

    shard: ShardEntry
    output: str
    problem: str | None
    records: dict[str, int]

    @classmethod
    def from_state(cls, state: Any) -> "ShardCount":
        shard = ShardEntry.from_line(state["shard"], where="shard count")
        return cls(**cls._fields_in(state) | {"shard": shard})
