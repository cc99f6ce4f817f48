"""A whole local job: validate, prepare the model, pre-split, run an engine, merge, record.

The output directory ends up exactly as the cloud job leaves its S3 output prefix (one
``<name>.out`` per input, R12: each input object gives one output named after it), plus
``_manifest.json`` (settings and per-file counts) and, only when every file succeeded, ``_SUCCESS``.
Outputs are written in the job's working folder and put in place as each input is done,
whole; ``_manifest.json`` follows them, so a run stopped any way can be resumed.
"""

import json
import os
import resource
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from batchinfer.endpoints.scoring import endpoint_settings
from batchinfer.engine.endpoint_engine import endpoint_client, run_endpoint
from batchinfer.engine.inputs import (
    InputFile,
    OpenSource,
    Units,
    check_compression,
    check_not_all_empty,
    collect_inputs,
    header_settings,
    local_source,
    resolve_units,
)
from batchinfer.engine.outcomes import EngineInterrupted, EngineReport, FileOutcome, Progress
from batchinfer.engine.output_place import LocalPlace, OutputPlace
from batchinfer.engine.previous_run import (
    WORKDIR_PREFIX,
    check_place,
    check_same_job,
    input_version,
    job_digests,
    kept_files,
)
from batchinfer.engine.s3_inputs import fetch_model, in_s3, s3_inputs
from batchinfer.engine.s3_place import S3Place
from batchinfer.engine.s3_requests import s3_client
from batchinfer.engine.s3_staging import S3Staging
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
    before batching. An output folder that holds anything is refused unless ``overwrite``
    (each output this run writes replaces the one there) or ``resume`` (an earlier run of
    the same job continues: :mod:`batchinfer.engine.previous_run`)."""

    inputs: Sequence[Path | str]  # local paths, or s3:// URIs and ManifestFiles of S3 objects
    output_dir: Path | str  # a local directory or an s3:// prefix
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
    overwrite: bool = False
    resume: bool = False


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
    # The input's size and modification time when it was read (``--resume`` reruns an
    # input that changed since).
    input_version: str | None = None


@dataclass
class JobResult:
    # SUCCEEDED, FAILED, INTERRUPTED (Ctrl-C, SIGTERM) or, while it runs, RUNNING
    status: str
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
    # SHA-256 of the settings and of the model, which ``--resume`` must find unchanged.
    digests: dict[str, str] = field(default_factory=dict)
    # Inputs an earlier run had done whose outputs ``--resume`` kept.
    kept_inputs: int = 0

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

    Each input's outputs are put in place once the input is done, whole (R19: none for an
    input that failed), and ``_manifest.json`` follows; until the first input is done the
    output folder is as it was (a model that fails to load changes nothing). Ctrl-C (and
    SIGTERM, SIGHUP) while the engine runs stops it, records the inputs done, marks the
    others INTERRUPTED and raises JobInterrupted. Either way there is no ``_SUCCESS``."""
    validate_job(job)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    inputs = [str(input) for input in job.inputs]
    remote = in_s3(inputs)
    output = str(job.output_dir)
    s3 = None
    if remote or is_s3_uri(output) or is_s3_uri(str(job.model)):
        s3 = s3_client()
    place: OutputPlace = S3Place(s3, output) if is_s3_uri(output) else LocalPlace(Path(output))
    # S3 inputs are listed now, before anything is written, and read once there is a
    # working folder; local ones are checked now.
    objects = s3_inputs(s3, inputs, job.selection, leave_out=output) if remote else None
    if objects is None:
        paths = [Path(input) for input in inputs]
        files = collect_inputs(paths, job.selection, leave_out=Path(output))
        job = _checked_inputs(files, job)
    earlier = check_place(place, overwrite=job.overwrite, resume=job.resume)
    progress = progress or Progress()
    workdir = Path(
        tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-", dir=place.work_parent)
    )
    staging = None
    if objects is not None:  # fetched as instances take them, as many ahead as there are
        staging = S3Staging(s3, objects, workdir / "inputs", ahead=job.settings.instance_count)
        files = staging.files
    try:
        kept = kept_files(earlier, files, place) if earlier and job.resume else {}
        todo = [file for file in files if file.name not in kept]
        if staging is not None:  # only the inputs to transform are read (one for its header)
            job = _checked_inputs(files, job, todo or files[:1], staging.source)
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
        digests = job_digests(_shape(job), model_dir or job.endpoint_url)
        if earlier and job.resume:
            check_same_job(earlier, digests, place)
        record = _RunRecord(job, place, started_at, started, files, digests, kept)
        record.user_module, record.missing_imports = module, missing_imports
        progress.job_started(sum(file.size for file in todo))
        publisher = _Publisher(record, progress, workdir, earlier.outputs() if earlier else {})

        def split_units() -> list[InputFile]:  # called by the engine as its servers start
            publisher.add(_split_inputs(todo, job, workdir, on_stage, staging))
            on_stage("infer")
            units = publisher.units()
            if staging is not None:
                staging.queue(units)
            return units

        # Only model servers have a start-up for the split to overlap; elsewhere it runs
        # first, so its time is not the engine's.
        units: Units = split_units if job.engine == "transform" else split_units()
        engine_started = time.perf_counter()
        status = "SUCCEEDED"
        try:
            if todo:
                report = run_engine(
                    job.engine,
                    units,
                    publisher.staging,
                    model_dir=model_dir,
                    settings=job.settings,
                    workers_per_instance=job.workers_per_instance,
                    progress=publisher,
                    endpoint_url=job.endpoint_url,
                    skip_blank_lines=job.skip_blank_lines,
                )
                record.effective = asdict(report.effective)
                record.startup_seconds = report.startup_seconds
            else:  # every input was done by the run resumed
                record.effective = earlier.manifest.get("effective") if earlier else None
        except EngineInterrupted:
            status = INTERRUPTED
        except BaseException as exc:
            publisher.stopped(f"the run stopped: {exc}")
            raise
        finally:
            record.transform_seconds = time.perf_counter() - engine_started
        on_stage("finalize")
        publisher.finish()
    finally:
        if staging is not None:
            staging.close()  # before the working folder goes: no fetch writes into it after
        shutil.rmtree(workdir, ignore_errors=True)
    result = record.result(status)
    record.write(result, final=True)
    if result.interrupted:
        raise JobInterrupted(result)
    return result


def _checked_inputs(
    files: list[InputFile],
    job: LocalJob,
    read: list[InputFile] | None = None,
    open_source: OpenSource = local_source,
) -> LocalJob:
    """``job`` once its input ``files`` pass the checks of their contents, told the names of
    their header with ``--header``; the first bytes of ``read`` (default: every file) are
    read, through ``open_source``."""
    read = files if read is None else read
    check_not_all_empty(files, job.inputs)
    settings = job.settings
    check_compression(read, settings.compression_type, settings.content_type, open_source)
    if job.header:
        job = replace(job, settings=header_settings(read, settings, open_source))
    return job


def _shape(job: LocalJob) -> dict[str, Any]:
    """What decides a job's output bytes and names: what ``--resume`` must find unchanged."""
    return {
        **asdict(job.settings),
        "shards": job.shards,
        "merge": job.merge,
        "header": job.header,
        "skip_blank_lines": job.skip_blank_lines,
    }


RUNNING = "RUNNING"
# While inputs are done, ``_manifest.json`` is rewritten at most this often.
MANIFEST_INTERVAL_SECONDS = 2.0


@dataclass
class _RunRecord:
    """What ``_manifest.json`` says of a job, at any point of its run."""

    job: LocalJob
    place: OutputPlace
    started_at: str
    started: float
    inputs: list[InputFile]
    digests: dict[str, str]
    kept: dict[str, dict[str, Any]]
    results: dict[str, FileResult] = field(default_factory=dict)
    user_module: str | None = None
    missing_imports: list[str] = field(default_factory=list)
    effective: dict[str, Any] | None = None
    startup_seconds: float | None = None
    transform_seconds: float = 0.0

    def result(self, status: str) -> JobResult:
        """The job's result; FAILED in place of SUCCEEDED where an input did not succeed.
        While it runs, only the inputs done are listed; at the end, every input."""
        files = [self._file(i, status) for i in self.inputs if status != RUNNING or self._done(i)]
        if status == "SUCCEEDED" and any(f.status != "SUCCEEDED" for f in files):
            status = "FAILED"
        startup = self.startup_seconds
        return JobResult(
            status=status,
            output_dir=self.place.location,
            engine=self.job.engine,
            started_at=self.started_at,
            seconds=round(time.perf_counter() - self.started, 3),
            settings=asdict(self.job.settings),
            effective=self.effective,
            files=files,
            engine_max_rss_mib=peak_memory_mib(),
            user_module=self.user_module,
            user_module_missing_imports=self.missing_imports,
            startup_seconds=startup,
            transform_seconds=round(self.transform_seconds - (startup or 0.0), 3),
            endpoint_url=self.job.endpoint_url,
            digests=self.digests,
            kept_inputs=len(self.kept),
        )

    def _done(self, file: InputFile) -> bool:
        return file.name in self.kept or file.name in self.results

    def _file(self, file: InputFile, status: str) -> FileResult:
        if file.name in self.kept:
            known = {f.name for f in fields(FileResult)}
            return FileResult(**{k: v for k, v in self.kept[file.name].items() if k in known})
        if file.name in self.results:
            return self.results[file.name]
        # Never split nor started: the run stopped first.
        return FileResult(
            name=file.name,
            input=file.where,
            outputs=[],
            status=INTERRUPTED if status == INTERRUPTED else "FAILED",
            error="interrupted (Ctrl-C) before it was done",
            input_version=input_version(file),
        )

    def write(self, result: JobResult, *, final: bool = False) -> None:
        """``_manifest.json`` for ``result``; at the end, ``_SUCCESS`` when it succeeded and
        none otherwise (one an earlier run left is removed)."""
        self.place.put_text(RESULT_MANIFEST, json.dumps(result.to_json(), indent=2) + "\n")
        if final and result.succeeded:
            self.place.put_text(SUCCESS_MARKER, "")
        elif final:
            self.place.remove([SUCCESS_MARKER])


class _Publisher(Progress):
    """Puts each input's outputs in place as soon as every unit of it is done, whole (R19:
    none of an input that failed), then rewrites ``_manifest.json``; every callback also
    goes on to ``progress``. The first output put in place removes an earlier run's
    ``_SUCCESS``: until then the output folder is as it was. Outputs an earlier run
    recorded for an input (``replaced``, by input name) go once this run's are in place, so
    no stale shard output stands beside them."""

    def __init__(
        self,
        record: _RunRecord,
        progress: Progress,
        workdir: Path,
        replaced: dict[str, list[str]],
    ) -> None:
        self.record = record
        self.progress = progress
        self._replaced = replaced
        self.staging = workdir / "outputs"
        self._merging = workdir / "merged"
        self._groups: list[_InputGroup] = []
        self._group_of: dict[str, _InputGroup] = {}
        self._outcomes: dict[str, FileOutcome] = {}
        self._lock = threading.Lock()
        self._retracted = False
        self._written = 0.0

    def add(self, groups: list["_InputGroup"]) -> None:
        self._groups += groups
        self._group_of.update({unit.name: group for group in groups for unit in group.units})

    def units(self) -> list[InputFile]:
        return [unit for group in self._groups for unit in group.units]

    def instances_ready(self, count: int) -> None:
        self.progress.instances_ready(count)

    def file_started(self, instance: int, file: InputFile) -> None:
        self.progress.file_started(instance, file)

    def file_progress(self, instance: int, file: InputFile, done: int) -> None:
        self.progress.file_progress(instance, file, done)

    def file_finished(self, outcome: FileOutcome) -> None:
        if outcome.file.fetch is not None:  # bytes of an S3 object fetched for it: read no more
            outcome.file.path.unlink(missing_ok=True)
        with self._lock:
            self._outcomes[outcome.file.name] = outcome
            group = self._group_of[outcome.file.name]
            if all(unit.name in self._outcomes for unit in group.units):
                self._finish(group)
                if time.monotonic() - self._written >= MANIFEST_INTERVAL_SECONDS:
                    self._written = time.monotonic()
                    self.record.write(self.record.result(RUNNING))
        self.progress.file_finished(outcome)

    def finish(self, stopped: str | None = None) -> None:
        """Record every input not yet done: interrupted, or failed (``stopped`` says why)."""
        with self._lock:
            for group in self._groups:
                if group.source.name not in self.record.results:
                    self._finish(group, stopped)

    def stopped(self, why: str) -> None:
        """The engine failed: record what is done so that ``--resume`` can go on from it."""
        if self._retracted:
            self.finish(why)
            self.record.write(self.record.result("FAILED"), final=True)

    def _finish(self, group: "_InputGroup", stopped: str | None = None) -> None:
        result = group.result(self._outcomes, self.record.job, self.staging, self._merging)
        if stopped and result.status != "SUCCEEDED":
            result.status, result.error = "FAILED", stopped
        if result.status == "SUCCEEDED":
            if not self._retracted:
                self.record.place.remove([SUCCESS_MARKER])
                self._retracted = True
            staged = self._merging if group.merged else self.staging
            for name in result.outputs:
                self.record.place.put_file(staged / name, name)
            stale = set(self._replaced.get(group.source.name, [])) - set(result.outputs)
            self.record.place.remove(sorted(stale))
        self.record.results[group.source.name] = result


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

    def result(
        self, outcomes: dict[str, FileOutcome], job: LocalJob, unit_dir: Path, merge_dir: Path
    ) -> FileResult:
        """What became of the input, its outputs named relative to ``unit_dir`` (or, merged,
        to ``merge_dir``); a unit without an outcome was interrupted."""
        parts = [outcomes[unit.name] for unit in self.units if unit.name in outcomes]
        interrupted = not self.error and len(parts) < len(self.units)
        errors = [self.error] if self.error else [p.error for p in parts if p.error]
        if interrupted:
            errors = ["interrupted (Ctrl-C) before it was done"]
        if errors:
            for unit in self.units:  # R19: nothing of a failed input stays, not even good shards
                (unit_dir / output_name(unit.name)).unlink(missing_ok=True)
        elif self.merged:
            _concatenate([p.output for p in parts], merge_dir / output_name(self.source.name))
        stats = [p.stats for p in parts if p.stats is not None]
        seconds = max((s.seconds for s in stats), default=0.0)
        records_in = None if errors else _sum_or_none([s.records_in for s in stats])
        if errors:
            outputs = []
        elif self.merged:
            outputs = [output_name(self.source.name)]
        else:
            outputs = [p.output.relative_to(unit_dir).as_posix() for p in parts]
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
            input_version=input_version(self.source),
        )


def _sum_or_none(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _split_inputs(
    files: list[InputFile],
    job: LocalJob,
    workdir: Path,
    on_stage: Callable[[str], None],
    staging: S3Staging | None = None,
) -> list[_InputGroup]:
    """Pre-split every input that is worth splitting (``--shards``) with the sharding library
    (S3 objects of ``staging``). An input that cannot be split fails alone; the others still
    run (R19)."""
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
            units = _shard_units(file, count, job, workdir, staging)
        except BatchInferError as exc:
            groups.append(_InputGroup(file, [], merged=job.merge, error=str(exc)))
            continue
        if count == 1:  # only its header dropped: it keeps its name, as an unsplit input
            groups.append(_InputGroup(file, [replace(units[0], name=file.name)], job.merge))
            continue
        groups.append(_InputGroup(file, units, merged=job.merge, shards=len(units)))
    return groups


def _shard_units(
    file: InputFile, count: int, job: LocalJob, workdir: Path, staging: S3Staging | None
) -> list[InputFile]:
    """``file`` cut into ``count`` line-aligned shards (fewer when records are longer). A
    plain file's shards are byte ranges of it, read in place; gzip input is re-chunked, and
    a processing container, which is handed whole files, gets copies, both written by
    :func:`split` under ``workdir``. A plain S3 object's shards are fetched when taken
    (``staging``); a gzip one is fetched whole first. The input itself when nothing could be
    cut."""
    parent = Path(file.name).parent
    gzip = splits_as_gzip(str(file.path), job.settings.compression_type)
    if staging is not None and not gzip:
        return staging.shard_units(file, count, header=job.header)
    if gzip or job.engine == "processing":
        if file.fetch is not None:
            file.fetch()
        index = split(
            str(file.path),
            str(workdir / "shards" / file.name),
            shards=count,
            header=job.header,
            compression_type=job.settings.compression_type,
        )
        units = [  # a shard's uri is the source itself when nothing could be cut
            InputFile(Path(shard.uri), (parent / shard.name).as_posix()) for shard in index.shards
        ]
        if file.fetch is not None and file.path.resolve() not in {unit.path for unit in units}:
            file.path.unlink()  # the object's copy, re-chunked into the shards
        return units
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
