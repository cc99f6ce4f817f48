"""The Python API: :func:`run` and :func:`plan` take what ``batchinfer run`` and ``batchinfer
plan`` take, as keyword arguments, and return their typed results; bad input raises the
error the command prints, with the same message.

The transform settings are the snake_case keys of CreateTransformJob's fields
(:class:`TransformKeywords`); a setting left out (or None) is not set, so its default
applies, as an option left out of the command line. The engine and the planner are imported
when a job runs, not with this module.
"""

from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict, Unpack

from batchinfer.engines import parse_local_engine
from batchinfer.errors import BatchInferError, ValidationError
from batchinfer.sharding.selection import InputSelection
from batchinfer.transform.csv_dialect import with_table
from batchinfer.transform.settings import TransformSettings
from batchinfer.uris import is_s3_uri

if TYPE_CHECKING:
    from batchinfer.engine.job_result import FileResult, JobResult
    from batchinfer.engine.job_spec import LocalJob
    from batchinfer.engine.outcomes import Progress
    from batchinfer.planning.job_plan import Plan
    from batchinfer.planning.tune import TunePoint

# A local path, as a string or a path object, or an ``s3://`` URI.
Location = str | PathLike[str]


class TransformKeywords(TypedDict, total=False):
    """The transform settings, one keyword per field of
    :class:`~batchinfer.transform.settings.TransformSettings` (CreateTransformJob's fields in
    snake_case, and batchinfer's ``bad_records`` and ``max_bad_records``):
    ``content_type='text/csv'``, ``split_type='Line'``, ``max_payload_mb=6``,
    ``environment={'KEY': 'value'}``, ``bad_records='quarantine'``..."""

    content_type: str | None
    accept: str | None
    split_type: str | None
    batch_strategy: str | None
    max_payload_mb: int | None
    max_concurrent_transforms: int | None
    assemble_with: str | None
    join_source: str | None
    input_filter: str | None
    output_filter: str | None
    compression_type: str | None
    instance_count: int | None
    instance_type: str | None
    invocations_timeout_seconds: int | None
    invocations_max_retries: int | None
    environment: Mapping[str, str] | None
    bad_records: str | None
    max_bad_records: int | None


class JobFailed(BatchInferError):
    """Some inputs of a run failed (R19: a file with a failed record gets no output). The
    outputs of the others are written and ``_manifest.json`` records every file; there is no
    ``_SUCCESS``. ``result`` is the whole run; the message is one ``FAILED <input>: <why>``
    line per failed input, as ``batchinfer run`` prints them before it exits 1."""

    def __init__(self, result: "JobResult") -> None:
        self.result = result
        self.lines = [_failure_line(failure) for failure in result.failures]
        super().__init__("\n".join(f"FAILED {line}" for line in self.lines))


def _failure_line(failure: "FileResult") -> str:
    error = failure.error or ""
    return error if error.startswith(failure.name) else f"{failure.name}: {error}"


def run(
    inputs: Location | Sequence[Location],
    *,
    output: Location,
    model: Location | None = None,
    engine: str = "transform",
    shards: int | Literal["auto"] | None = None,
    merge: bool = False,
    header: bool = False,
    delimiter: str | None = None,
    encoding: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    skip_blank_lines: bool = False,
    endpoint_url: str | None = None,
    overwrite: bool = False,
    resume: bool = False,
    progress: "Progress | None" = None,
    on_stage: Callable[[str], None] | None = None,
    **settings: Unpack[TransformKeywords],
) -> "JobResult":
    """Run a Batch Transform job on this machine, as ``batchinfer run`` does, and return its
    result: status, per-file counts, durations and output names (``_manifest.json``).

    ``inputs``: files, directories, a ManifestFile or ``s3://`` prefixes; ``output``: the
    directory or ``s3://`` prefix for the ``.out`` files; ``model``: a model directory or
    ``model.tar.gz``, local or ``s3://`` (the transform and processing engines); ``engine``:
    ``transform``, ``processing`` or ``endpoint`` (with ``endpoint_url``). The other
    arguments are the command's options in snake_case, and the transform settings
    (:class:`TransformKeywords`). ``progress`` receives the engine's callbacks, ``on_stage``
    each stage's name (``split``, ``infer``, ``finalize``).

    Raises :class:`~batchinfer.errors.ValidationError` or
    :class:`~batchinfer.errors.InputError` before any work, :class:`JobFailed` when an input
    failed, and ``JobInterrupted`` (a KeyboardInterrupt) on Ctrl-C."""
    job = local_job(
        inputs,
        output=output,
        model=model,
        engine=engine,
        shards=shards,
        merge=merge,
        header=header,
        delimiter=delimiter,
        encoding=encoding,
        include=include,
        exclude=exclude,
        skip_blank_lines=skip_blank_lines,
        endpoint_url=endpoint_url,
        overwrite=overwrite,
        resume=resume,
        **settings,
    )
    return run_local_job(job, progress, on_stage)


def local_job(
    inputs: Location | Sequence[Location],
    *,
    output: Location,
    model: Location | None = None,
    engine: str = "transform",
    shards: int | Literal["auto"] | None = None,
    merge: bool = False,
    header: bool = False,
    delimiter: str | None = None,
    encoding: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    skip_blank_lines: bool = False,
    endpoint_url: str | None = None,
    overwrite: bool = False,
    resume: bool = False,
    **settings: Unpack[TransformKeywords],
) -> "LocalJob":
    """The job :func:`run` runs, with its settings validated (the arguments are
    :func:`run`'s)."""
    from batchinfer.engine.job_spec import LocalJob

    return LocalJob(
        inputs=[_local_or_s3(i) for i in _listed(inputs)],
        output_dir=_local_or_s3(output),
        model=None if model is None else _local_or_s3(model),
        settings=_settings(settings, delimiter, encoding),
        engine=parse_local_engine(engine),
        shards=shards,
        merge=merge,
        endpoint_url=endpoint_url,
        header=header,
        selection=InputSelection(tuple(include), tuple(exclude)),
        skip_blank_lines=skip_blank_lines,
        overwrite=overwrite,
        resume=resume,
    )


def run_local_job(
    job: "LocalJob",
    progress: "Progress | None" = None,
    on_stage: Callable[[str], None] | None = None,
) -> "JobResult":
    """Run ``job`` (from :func:`local_job`): its result, or :class:`JobFailed` when an input
    failed."""
    from batchinfer.engine.local_job import run_job

    result = run_job(job, progress, on_stage or _unseen)
    if not result.succeeded:
        raise JobFailed(result)
    return result


def plan(
    inputs: Location | Sequence[Location],
    *,
    model: Location | None = None,
    engine: str = "transform",
    shards: int | Literal["auto"] | None = None,
    shard_size: int | str | None = None,
    merge: bool = False,
    header: bool = False,
    delimiter: str | None = None,
    encoding: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    skip_blank_lines: bool = False,
    region: str | None = None,
    prices: Mapping[str, float] | None = None,
    sample_records: int | None = None,
    tune: bool = False,
    endpoint_concurrency: int | None = None,
    throughput: float | None = None,
    on_stage: Callable[[str], None] | None = None,
    on_point: "Callable[[TunePoint], None] | None" = None,
    **settings: Unpack[TransformKeywords],
) -> "Plan":
    """What a job over ``inputs`` would do and cost, as ``batchinfer plan`` says: objects,
    shards, the largest record against MaxPayloadInMB, warnings, and with ``model`` a
    measured throughput, the duration per instance and the cost. Nothing is written.

    ``inputs``: files, directories, a ManifestFile or ``s3://`` prefixes; ``shard_size``:
    bytes, or a size such as ``'64MiB'``; ``region``: where to price (default: AWS_REGION,
    else us-east-1); ``prices``: instance type -> USD per hour; ``sample_records`` and
    ``endpoint_concurrency`` default as the command's options do; ``throughput``: rows a
    second of one instance of the job's type, measured on it (a GPU type needs it for a
    duration and cost). ``on_stage`` receives
    each stage's name, ``on_point`` each point ``tune`` measures. Raises as :func:`run`
    does before any work."""
    from batchinfer.endpoints.targets import DEFAULT_ENDPOINT_CONCURRENCY
    from batchinfer.planning.job_plan import (
        DEFAULT_SAMPLE_RECORDS,
        PlanRequest,
        default_region,
        make_plan,
    )
    from batchinfer.planning.survey import Sharding
    from batchinfer.units import parse_size

    if shards is not None and shard_size is not None:
        raise ValidationError("--shards, --shard-size: give one of them, not both")
    if isinstance(shards, int) and shards < 1:
        raise ValidationError(f"--shards must be at least 1 or 'auto', not {shards}")
    size = (
        parse_size(shard_size, field="--shard-size") if isinstance(shard_size, str) else shard_size
    )
    request = PlanRequest(
        inputs=[str(i) for i in _listed(inputs)],
        settings=_settings(settings, delimiter, encoding),
        engine=parse_local_engine(engine),
        sharding=Sharding(shards=shards, shard_size=size),
        merge=merge,
        selection=InputSelection(tuple(include), tuple(exclude)),
        skip_blank_lines=skip_blank_lines,
        model=None if model is None else _local_or_s3(model),
        region=region or default_region(),
        prices=dict(prices or {}),
        sample_records=DEFAULT_SAMPLE_RECORDS if sample_records is None else sample_records,
        tune=tune,
        endpoint_concurrency=(
            DEFAULT_ENDPOINT_CONCURRENCY if endpoint_concurrency is None else endpoint_concurrency
        ),
        header=header,
        throughput=throughput,
    )
    return make_plan(request, on_stage=on_stage or _unseen, on_point=on_point or _unseen)


def _settings(
    given: TransformKeywords, delimiter: str | None, encoding: str | None
) -> TransformSettings:
    """The settings ``given`` (a None value is not set), with the table options; validated."""
    request = {key: value for key, value in given.items() if value is not None}
    return TransformSettings.from_request(with_table(request, delimiter, encoding))


def _local_or_s3(location: Location) -> Path | str:
    """An ``s3://`` URI as it is (a path would fold its ``//``), else a local path."""
    return location if isinstance(location, str) and is_s3_uri(location) else Path(location)


def _listed(inputs: Location | Sequence[Location]) -> list[Location]:
    return [inputs] if isinstance(inputs, str | PathLike) else list(inputs)


def _unseen(_event: object) -> None:
    """A callback nobody listens to."""
