"""A whole local job: validate, prepare the model, pre-split, run an engine, merge, record.

The output directory ends up exactly as the cloud job leaves its S3 output prefix (one
``<name>.out`` per input, R12: each input object gives one output named after it), plus
``_manifest.json`` (settings and per-file counts) and, only when every file succeeded, ``_SUCCESS``.
Outputs are written in the job's working folder and put in place as each input is done,
whole; ``_manifest.json`` follows them, so a run stopped any way can be resumed.
"""

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from batchinfer.engine.endpoint_engine import run_endpoint
from batchinfer.engine.input_groups import split_inputs
from batchinfer.engine.inputs import (
    InputFile,
    OpenSource,
    Units,
    check_leading_bytes,
    check_not_all_empty,
    collect_inputs,
    header_settings,
    local_source,
    resolve_units,
)
from batchinfer.engine.job_result import INTERRUPTED, JobInterrupted, JobResult
from batchinfer.engine.job_spec import LocalJob, validate_job
from batchinfer.engine.outcomes import EngineInterrupted, EngineReport, Progress
from batchinfer.engine.output_place import LocalPlace, OutputPlace
from batchinfer.engine.previous_run import (
    WORKDIR_PREFIX,
    check_place,
    check_same_job,
    job_digests,
    kept_files,
)
from batchinfer.engine.publishing import Publisher, RunRecord
from batchinfer.engine.s3_inputs import fetch_model, in_s3, s3_inputs
from batchinfer.engine.s3_place import S3Place
from batchinfer.engine.s3_requests import s3_client
from batchinfer.engine.s3_staging import S3Staging
from batchinfer.engines import LocalEngine
from batchinfer.errors import ValidationError
from batchinfer.model_artifact import prepare_model_dir
from batchinfer.serving.image_imports import unprovided_imports
from batchinfer.serving.model_requirements import ensure_requirements
from batchinfer.serving.readable import check_readable
from batchinfer.transform.settings import TransformSettings
from batchinfer.uris import is_s3_uri


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
        record = RunRecord(job, place, started_at, started, files, digests, kept)
        record.user_module, record.missing_imports = module, missing_imports
        progress.job_started(sum(file.size for file in todo))
        publisher = Publisher(record, progress, workdir, earlier.outputs() if earlier else {})

        def split_units() -> list[InputFile]:  # called by the engine as its servers start
            publisher.add(split_inputs(todo, job, workdir, on_stage, staging))
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
    check_leading_bytes(read, settings, open_source)
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
