"""A whole local job: validate, prepare the model, pre-split, run an engine, merge, record.

The output directory ends up exactly as the cloud job leaves its S3 output prefix (one
``<name>.out`` per input, R12: each input object gives one output named after it), plus
``_manifest.json`` (settings and per-file counts) and, only when every file succeeded, ``_SUCCESS``.
"""

import json
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from batchinfer.endpoints.scoring import endpoint_settings
from batchinfer.engine.endpoint_engine import endpoint_client, run_endpoint
from batchinfer.engine.inputs import (
    InputFile,
    Units,
    check_compression,
    check_not_all_empty,
    collect_inputs,
    header_settings,
    resolve_units,
)
from batchinfer.engine.outcomes import EngineInterrupted, EngineReport, FileOutcome, Progress
from batchinfer.engine.s3_inputs import fetch_model, in_s3, s3_inputs, stage_inputs
from batchinfer.engine.s3_requests import s3_client
from batchinfer.engines import LocalEngine
from batchinfer.errors import BatchInferError, ValidationError
from batchinfer.model_artifact import prepare_model_dir
from batchinfer.serving.image_imports import unprovided_imports
from batchinfer.serving.model_requirements import ensure_requirements
from batchinfer.serving.readable import check_readable
from batchinfer.sharding import plan_shards, shard_name, split
from batchinfer.sharding.auto import requested_shards
from batchinfer.sharding.compatibility import check_sharding
from batchinfer.sharding.local_files import LocalSource, kernel_copy
from batchinfer.sharding.selection import EVERY_INPUT, InputSelection
from batchinfer.sharding.splitter import splits_as_gzip
from batchinfer.transform.assemble import RESULT_MANIFEST, SUCCESS_MARKER, output_name
from batchinfer.transform.csv_dialect import check_header_type
from batchinfer.transform.records import check_skip_blank_lines
from batchinfer.transform.settings import TransformSettings
from batchinfer.uris import is_s3_uri


@dataclass(frozen=True)
class LocalJob:
    """A local job. ``model`` is the model the transform and processing engines serve; the
    endpoint engine takes none: the server at ``endpoint_url`` serves its own. ``selection``
    picks the inputs (``--include``, ``--exclude``); ``skip_blank_lines`` drops empty lines
    before batching."""

    inputs: Sequence[Path | str]  # local paths, or s3:// URIs and ManifestFiles of S3 objects
    output_dir: Path
    model: Path | str | None  # a local path or an s3:// URI
    settings: TransformSettings
    engine: LocalEngine = "transform"
    shards: int | Literal["auto"] | None = None
    merge: bool = False
    workers_per_instance: int | None = None
    endpoint_url: str | None = None
    # The inputs start with a header row: it is no record; its names reach the model.
    header: bool = False
    selection: InputSelection = EVERY_INPUT
    skip_blank_lines: bool = False


@dataclass
class FileResult:
    """One output of the job, as ``_manifest.json`` records it."""

    name: str
    input: str
    outputs: list[str]
    status: str
    records_in: int | None = None
    records_out: int | None = None
    # Why records_out is null for a file that succeeded (R17: a CSV join adds the prediction to its
    # row, one line per record), else None.
    records_not_counted: str | None = None
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    rows_per_second: float | None = None
    shards: int | None = None
    # The instances that ran it, numbered from 1 as the summary and the progress show them.
    instances: list[int] = field(default_factory=list)
    error: str | None = None


@dataclass
class JobResult:
    status: str  # SUCCEEDED, FAILED or INTERRUPTED (Ctrl-C)
    output_dir: str
    engine: str
    started_at: str
    seconds: float
    settings: dict[str, Any]
    effective: dict[str, Any] | None  # None when interrupted before the engine resolved them
    files: list[FileResult]
    engine_max_rss_mib: float
    # The model's handler script (``code/inference.py``), relative to the model, or None.
    user_module: str | None = None
    # What the user module imports that batchinfer's image does not provide (nor its
    # code/requirements.txt): it would fail there.
    user_module_missing_imports: list[str] = field(default_factory=list)
    # Until every model server answered /ping (None for the processing engine), then the
    # transform itself; ``seconds`` is the whole run (also splitting, merging, recording).
    # For the endpoint engine, until its server answered /ping.
    startup_seconds: float | None = None
    transform_seconds: float = 0.0
    # The server the endpoint engine scored with.
    endpoint_url: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.status == "SUCCEEDED"

    @property
    def failures(self) -> list[FileResult]:
        return [f for f in self.files if f.status != "SUCCEEDED"]

    @property
    def interrupted(self) -> bool:
        return self.status == INTERRUPTED

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        done = [f for f in self.files if f.records_in is not None]
        counted = all(f.records_out is not None for f in done)
        data["totals"] = {
            "files": len(self.files),
            "failed": len(self.failures),
            "records_in": sum(f.records_in or 0 for f in done),
            "records_out": sum(f.records_out or 0 for f in done) if counted else None,
            "bytes_in": sum(f.bytes_in for f in self.files),
            "bytes_out": sum(f.bytes_out for f in self.files),
            # over the transform time, as each file's rate is over its own
            "rows_per_second": _rate(sum(f.records_in or 0 for f in done), self.transform_seconds),
        }
        return data


INTERRUPTED = "INTERRUPTED"


class JobInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the job's engine; ``result`` is what ``_manifest.json`` records."""

    def __init__(self, result: JobResult) -> None:
        super().__init__()
        self.result = result


def peak_memory_mib() -> float:
    """This process's peak resident memory. VmHWM, unlike ru_maxrss, is not inherited from
    the parent that started this process (Linux keeps ru_maxrss across exec)."""
    try:
        status = Path("/proc/self/status").read_text()
        kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    except (OSError, StopIteration):
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kib / 1024, 1)


def _rate(records: int | None, seconds: float) -> float | None:
    return round(records / seconds, 1) if records is not None and seconds > 0 else None


def validate_job(job: LocalJob) -> None:
    """Checks that depend on more than one setting of a local job (names the option)."""
    if isinstance(job.shards, int) and job.shards < 1:
        raise ValidationError(f"--shards must be at least 1 or 'auto', not {job.shards}")
    if job.merge and job.shards is None:
        raise ValidationError("--merge joins the outputs of shards: it needs --shards")
    _check_engine_needs(job)
    if job.header:
        check_header_type(job.settings)
    if job.skip_blank_lines:
        check_skip_blank_lines(job.settings.split_type)
    check_sharding(
        job.settings,
        split=None if job.shards is None else "--shards",
        merge="--merge" if job.merge else None,
        name=lambda key: "--" + key.replace("_", "-"),
    )


def _check_engine_needs(job: LocalJob) -> None:
    """The endpoint engine needs ``--endpoint-url`` and no ``--model``; the others the
    reverse."""
    if job.engine == "endpoint":
        if not job.endpoint_url:
            raise ValidationError(
                "--engine endpoint needs --endpoint-url http://HOST:PORT: the server whose "
                "/invocations scores the input"
            )
        if job.model is not None:
            raise ValidationError(
                "--model is not used with --engine endpoint: the server at --endpoint-url "
                "serves its own model; leave --model out"
            )
        endpoint_client(job.endpoint_url, job.settings)  # a malformed URL, before any work
        endpoint_settings(job.settings)  # C8: what a real-time endpoint accepts
        return
    if job.endpoint_url:
        raise ValidationError(
            f"--endpoint-url is only for --engine endpoint, not --engine {job.engine}"
        )
    if job.model is None:
        raise ValidationError(f"--engine {job.engine} needs --model (a directory or model.tar.gz)")


def run_job(
    job: LocalJob,
    progress: Progress | None = None,
    on_stage: Callable[[str], None] = lambda _stage: None,
) -> JobResult:
    """Run ``job`` and write its outputs, ``_manifest.json`` and (on success) ``_SUCCESS``.

    Ctrl-C while the engine runs stops it, removes every output of an input that is not
    done, records the rest as INTERRUPTED and raises JobInterrupted; earlier, it leaves no
    manifest at all. Either way there is no ``_SUCCESS``."""
    validate_job(job)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    inputs = [str(input) for input in job.inputs]
    remote = in_s3(inputs)
    s3 = s3_client() if remote or is_s3_uri(str(job.model)) else None
    # S3 inputs are listed now, before anything is written, and staged once there is a
    # working folder; local ones are checked now.
    objects = s3_inputs(s3, inputs, job.selection) if remote else None
    if objects is None:
        files = collect_inputs([Path(input) for input in inputs], job.selection)
        job = _checked_inputs(files, job)
    progress = progress or Progress()
    job.output_dir.mkdir(parents=True, exist_ok=True)
    _clear_previous_run(job.output_dir)
    _remove_dead_workdirs(job.output_dir)
    workdir = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-", dir=job.output_dir))
    try:
        if objects is not None:
            on_stage("stage")
            files = stage_inputs(s3, objects, workdir / "inputs")
            job = _checked_inputs(files, job)
        progress.job_started(sum(file.size for file in files))
        model = job.model
        if model is not None and is_s3_uri(str(model)):
            model = fetch_model(s3, str(model), workdir / "artifact")
        model_dir = None if model is None else prepare_model_dir(Path(model), workdir)
        module, missing_imports = None, []
        if model_dir is not None:
            found = check_readable(model_dir, job.settings.environment, job.settings.content_type)
            # One clear line now, rather than every model server's log later.
            ensure_requirements(model_dir, {**os.environ, **job.settings.environment})
            module = found.relative_to(model_dir).as_posix() if found else None
            missing_imports = unprovided_imports(found, model_dir) if found else []
        groups: list[_InputGroup] = []

        def split_units() -> list[InputFile]:  # called by the engine as its servers start
            groups.extend(_split_inputs(files, job, workdir, on_stage))
            on_stage("infer")
            return [unit for group in groups for unit in group.units]

        unit_dir = workdir / "outputs" if job.merge else job.output_dir
        # Only model servers have a start-up for the split to overlap; elsewhere it runs
        # first, so its time is not the engine's.
        units: Units = split_units if job.engine == "transform" else split_units()
        engine_started = time.perf_counter()
        report: EngineReport | None
        try:
            report = run_engine(
                job.engine,
                units,
                unit_dir,
                model_dir=model_dir,
                settings=job.settings,
                workers_per_instance=job.workers_per_instance,
                progress=progress,
                endpoint_url=job.endpoint_url,
                skip_blank_lines=job.skip_blank_lines,
            )
            outcomes = report.outcomes
        except EngineInterrupted as exc:
            report, outcomes = None, exc.finished
        transform_seconds = time.perf_counter() - engine_started
        by_name = {outcome.file.name: outcome for outcome in outcomes}
        on_stage("finalize")
        results = [group.result(by_name, job, unit_dir) for group in groups]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if report is None:
        status = INTERRUPTED
    else:
        status = "SUCCEEDED" if all(r.status == "SUCCEEDED" for r in results) else "FAILED"
    startup = report.startup_seconds if report else None
    result = JobResult(
        status=status,
        output_dir=str(job.output_dir),
        engine=job.engine,
        started_at=started_at,
        seconds=round(time.perf_counter() - started, 3),
        settings=asdict(job.settings),
        effective=asdict(report.effective) if report else None,
        files=results,
        engine_max_rss_mib=peak_memory_mib(),
        user_module=module,
        user_module_missing_imports=missing_imports,
        startup_seconds=startup,
        transform_seconds=round(transform_seconds - (startup or 0.0), 3),
        endpoint_url=job.endpoint_url,
    )
    (job.output_dir / RESULT_MANIFEST).write_text(json.dumps(result.to_json(), indent=2) + "\n")
    if result.interrupted:
        raise JobInterrupted(result)
    if result.succeeded:
        (job.output_dir / SUCCESS_MARKER).write_text("")
    return result


def _checked_inputs(files: list[InputFile], job: LocalJob) -> LocalJob:
    """``job`` once its input ``files`` pass the checks of their contents, told the names of
    their header with ``--header``."""
    check_not_all_empty(files, job.inputs)
    check_compression(files, job.settings.compression_type, job.settings.content_type)
    return replace(job, settings=header_settings(files, job.settings)) if job.header else job


# A job's working folder in its output directory: ``.batchinfer-<pid>-<random>``.
WORKDIR_PREFIX = ".batchinfer-"


def _remove_dead_workdirs(output_dir: Path) -> None:
    """Remove the working folders of jobs whose process is gone (one killed with SIGKILL
    could not remove its own); a folder whose process may still run is left alone."""
    for folder in output_dir.glob(f"{WORKDIR_PREFIX}*-*"):
        pid = folder.name.removeprefix(WORKDIR_PREFIX).split("-", 1)[0]
        if folder.is_dir() and pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: running
        pass
    return True


def _clear_previous_run(output_dir: Path) -> None:
    """Remove what an earlier run recorded in ``_manifest.json`` (its outputs, the manifest and
    ``_SUCCESS``), so no stale output stands beside this run's (other files are left alone)."""
    manifest = output_dir / RESULT_MANIFEST
    (output_dir / SUCCESS_MARKER).unlink(missing_ok=True)
    try:
        previous = json.loads(manifest.read_text())
        stale = [name for entry in previous["files"] for name in entry["outputs"]]
    except (OSError, ValueError, KeyError, TypeError):
        stale = []
    for name in stale:
        (output_dir / name).unlink(missing_ok=True)
    manifest.unlink(missing_ok=True)


def run_engine(
    engine: LocalEngine,
    units: Units,
    output_dir: Path,
    *,
    model_dir: Path | None,
    settings: TransformSettings,
    workers_per_instance: int | None = None,
    progress: Progress | None = None,
    endpoint_url: str | None = None,
    skip_blank_lines: bool = False,
) -> EngineReport:
    """Transform ``units`` into ``output_dir`` with ``engine`` on ``settings.instance_count``
    local instances (model servers, processing containers, or files scored at once through
    the endpoint at ``endpoint_url``). A function giving the units is called while the
    model servers start, or first where there are none. ``skip_blank_lines`` drops empty
    lines."""
    if engine == "endpoint":
        if endpoint_url is None:
            raise ValidationError("--engine endpoint needs --endpoint-url")
        return run_endpoint(
            resolve_units(units),
            output_dir,
            url=endpoint_url,
            settings=settings,
            progress=progress,
            skip_blank_lines=skip_blank_lines,
        )
    if model_dir is None:
        raise ValidationError(f"--engine {engine} needs --model")
    if engine == "processing":
        from batchinfer.engine.processing_engine import run_processing

        return run_processing(
            resolve_units(units),
            output_dir,
            model_dir=model_dir,
            settings=settings,
            progress=progress,
            skip_blank_lines=skip_blank_lines,
        )
    from batchinfer.engine.transform_engine import run_transform

    return run_transform(
        units,
        output_dir,
        model_dir=model_dir,
        settings=settings,
        workers_per_instance=workers_per_instance,
        progress=progress,
        skip_blank_lines=skip_blank_lines,
    )


@dataclass
class _InputGroup:
    """One input file and the units (itself, or its shards) the engine runs for it."""

    source: InputFile
    units: list[InputFile]
    merged: bool
    shards: int | None = None  # how many shards it was split into, None when not split
    error: str | None = None  # why it could not be split

    def result(self, outcomes: dict[str, FileOutcome], job: LocalJob, unit_dir: Path) -> FileResult:
        """What became of the input; a unit without an outcome was interrupted."""
        parts = [outcomes[unit.name] for unit in self.units if unit.name in outcomes]
        interrupted = not self.error and len(parts) < len(self.units)
        errors = [self.error] if self.error else [p.error for p in parts if p.error]
        if interrupted:
            errors = ["interrupted (Ctrl-C) before it was done"]
        if errors:
            for unit in self.units:  # R19: nothing of a failed input stays, not even good shards
                (unit_dir / output_name(unit.name)).unlink(missing_ok=True)
        elif self.merged:
            merged = job.output_dir / output_name(self.source.name)
            _concatenate([p.output for p in parts], merged)
        stats = [p.stats for p in parts if p.stats is not None]
        seconds = max((s.seconds for s in stats), default=0.0)
        records_in = None if errors else _sum_or_none([s.records_in for s in stats])
        if errors:
            outputs = []
        elif self.merged:
            outputs = [output_name(self.source.name)]
        else:
            outputs = [p.output.relative_to(job.output_dir).as_posix() for p in parts]
        records_out = None if errors else _sum_or_none([s.records_out for s in stats])
        return FileResult(
            name=self.source.name,
            input=self.source.where,
            outputs=outputs,
            status=INTERRUPTED if interrupted else "FAILED" if errors else "SUCCEEDED",
            records_in=records_in,
            records_out=records_out,
            records_not_counted=(
                job.settings.records_not_counted if records_in is not None else None
            ),
            bytes_in=sum(s.bytes_in for s in stats),
            bytes_out=sum(s.bytes_out for s in stats),
            seconds=round(seconds, 3),
            rows_per_second=_rate(records_in, seconds),
            shards=self.shards,
            instances=sorted({p.instance + 1 for p in parts}),
            error="; ".join(str(e) for e in errors) or None,
        )


def _sum_or_none(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _split_inputs(
    files: list[InputFile], job: LocalJob, workdir: Path, on_stage: Callable[[str], None]
) -> list[_InputGroup]:
    """Pre-split every input that is worth splitting (``--shards``) with the sharding library.
    An input that cannot be split fails alone; the others still run (R19)."""
    if job.shards is None and not job.header:
        return [_InputGroup(f, [f], merged=False) for f in files]
    on_stage("split")
    groups = []
    for file in files:
        count = requested_shards(file.size, job.shards, job.settings.instance_count)
        if file.size == 0 or (count == 1 and not job.header):  # a split drops a header
            groups.append(_InputGroup(file, [file], merged=job.merge))
            continue
        try:
            units = _shard_units(file, count, job, workdir)
        except BatchInferError as exc:
            groups.append(_InputGroup(file, [], merged=job.merge, error=str(exc)))
            continue
        if count == 1:  # only its header dropped: it keeps its name, as an unsplit input
            groups.append(_InputGroup(file, [replace(units[0], name=file.name)], job.merge))
            continue
        groups.append(_InputGroup(file, units, merged=job.merge, shards=len(units)))
    return groups


def _shard_units(file: InputFile, count: int, job: LocalJob, workdir: Path) -> list[InputFile]:
    """``file`` cut into ``count`` line-aligned shards (fewer when records are longer). A
    plain file's shards are byte ranges of it, read in place; gzip input is re-chunked, and
    a processing container, which is handed whole files, gets copies, both written by
    :func:`split` under ``workdir``. The input itself when nothing could be cut."""
    parent = Path(file.name).parent
    gzip = splits_as_gzip(str(file.path), job.settings.compression_type)
    if gzip or job.engine == "processing":
        index = split(
            str(file.path),
            str(workdir / "shards" / file.name),
            shards=count,
            header=job.header,
            compression_type=job.settings.compression_type,
        )
        return [  # a shard's uri is the source itself when nothing could be cut
            InputFile(Path(shard.uri), (parent / shard.name).as_posix()) for shard in index.shards
        ]
    source = LocalSource(str(file.path))
    try:
        plan = plan_shards(
            source.size, source.read_range, shards=count, header=job.header, source=str(file.path)
        )
    finally:
        source.close()
    if plan.whole_object:
        return [file]
    stem = Path(file.name).name
    return [
        InputFile(file.path, (parent / shard_name(stem, n)).as_posix(), start, end)
        for n, (start, end) in enumerate(plan.ranges)
    ]


def _concatenate(parts: list[Path], target: Path) -> None:
    """Write ``parts`` in order into ``target`` atomically, copying in the kernel."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    size = os.fstat(src.fileno()).st_size
                    kernel_copy(src.fileno(), out.fileno(), 0, size, source=str(part))
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
