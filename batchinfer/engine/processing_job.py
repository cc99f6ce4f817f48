"""Processing mode: the inference image run as a SageMaker Processing job (spec P1-P8: how SageMaker
runs a Processing job).

Every file under the input directory is transformed in-process by the same handler the
model server uses, with the same record framing, DataProcessing and assembly as a
transform job (:mod:`batchinfer.transform`), so each ``<name>.out`` is byte for byte what
Batch Transform would write. Requests run on a pool of worker processes, one per core.
A file that fails gets no ``.out``; the others complete; the exit code is then non-zero and
the first KB of the reason goes to ``/opt/ml/output/message`` (P8: a job completes only when every
container exits with 0).
"""

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from batchinfer.engine.file_queue import files_at_once, take_files
from batchinfer.engine.inputs import InputFile, collect_inputs
from batchinfer.engine.outcomes import FileOutcome, Progress, transform_input
from batchinfer.engine.worker_server import start_worker_server
from batchinfer.errors import BatchInferError
from batchinfer.parent_death import die_with
from batchinfer.serving.handlers import InferenceHandler, load_handler
from batchinfer.serving.server import visible_gpus
from batchinfer.serving.server_errors import MODEL_LOAD_FAILED, ModelLoadError, error_answer
from batchinfer.transform.record_errors import checked_response
from batchinfer.transform.server_limits import execution_parameters
from batchinfer.transform.settings import TransformSettings

RESOURCE_CONFIG = Path("/opt/ml/config/resourceconfig.json")
MESSAGE_LIMIT = 1024
# How long a starting worker waits for its GPU from the queue the workers share.
GPU_DEAL_SECONDS = 60

_handler: InferenceHandler | None = None
# Why this worker could not load the model, as the job says it (a pool whose initializer
# raised would only say that a worker died).
_load_error: str | None = None


def _load(model_dir: str, job: int, gpus: Any, job_environment: dict[str, str]) -> None:
    """A worker's start: it stops once the job's process ``job`` is gone (its parent is the
    forkserver, which waits for every worker to end), takes its GPU from the queue ``gpus``
    (None: no GPUs), then loads the model (on that GPU, the only one it sees) with the
    job's own settings in its environment (``TransformSettings.job_environment``: the
    records it may set aside, the Parquet join), as a transform job's server has them."""
    global _handler, _load_error
    die_with(job)
    if gpus is not None:
        # Waits its turn: the workers start at once, and a queue read by another is locked.
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus.get(timeout=GPU_DEAL_SECONDS)
    try:
        _handler = load_handler(Path(model_dir), {**os.environ, **job_environment})
    except ModelLoadError as exc:
        _load_error = f"{MODEL_LOAD_FAILED}: {exc}"


def _why_not_loaded() -> str | None:
    return _load_error


def _invoke(body: bytes, content_type: str | None, accept: str | None) -> tuple[int, bytes]:
    """One request in a worker process: (status, body), like the HTTP server answers; a
    worker whose model did not load says why (the load check at the start may have asked
    only the workers that did)."""
    try:
        if _handler is None:
            raise ModelLoadError(str(_load_error))
        return 200, _handler.invoke(body, content_type, accept)[0]
    except Exception as exc:  # answered as the server answers it, which keeps serving
        return error_answer(exc)


def current_host(config: Path = RESOURCE_CONFIG) -> str:
    """This instance's name from resourceconfig.json (P7: each instance finds its name in
    resourceconfig.json), ``algo-1`` where there is none."""
    try:
        return str(json.loads(config.read_text())["current_host"])
    except (OSError, ValueError, KeyError, TypeError):
        return "algo-1"


def run_processing_job(
    input_dir: Path,
    output_dir: Path,
    *,
    model_dir: Path,
    settings: TransformSettings,
    workers: int,
    progress: Progress | None = None,
    skip_blank_lines: bool = False,
    marks_in_output: bool = False,
    ranges: Sequence[InputFile] = (),
) -> list[dict[str, object]]:
    """Transform every file under ``input_dir``, and the byte ranges of files ``ranges``
    (the local engine's shards, read in place), into ``output_dir``; one record per file.
    ``progress`` hears of each file as it starts and after each of its requests;
    ``skip_blank_lines`` drops empty lines; ``marks_in_output`` leaves the marker lines
    of records set aside in the outputs, as a transform job's output holds them (the
    pipeline's CountShard takes them out), instead of writing the errors files."""
    progress = progress or Progress()
    files = job_inputs(input_dir, ranges)
    _check_writable(output_dir)
    effective = settings.resolve(execution_parameters(workers))
    # Where the pool's workers come from (started already by ``batchinfer process``), its
    # share of the cores in the environment they inherit.
    start_worker_server(workers, model_dir, settings.job_environment)
    context = get_context("forkserver")
    with ProcessPoolExecutor(
        workers,
        context,
        initializer=_load,
        initargs=(
            str(model_dir),
            os.getpid(),
            _dealt_gpus(workers, context),
            settings.job_environment,
        ),
    ) as pool:
        # One ask a worker: the pool starts a worker for each ask it cannot give an idle one,
        # so every worker loads the model now, at once, rather than the last ones when the
        # first requests come (or, for a small input, only as the pool shuts down).
        asks = [pool.submit(_why_not_loaded) for _ in range(workers)]
        not_loaded = next(filter(None, (ask.result() for ask in asks)), None)
        if not_loaded:
            raise ModelLoadError(not_loaded)

        def invoke(body: bytes) -> bytes:
            request = pool.submit(_invoke, body, settings.content_type, settings.accept)
            return checked_response(*request.result())

        def work(instance: int, file: InputFile) -> FileOutcome:
            return transform_input(
                file,
                output_dir,
                instance=instance,
                invoke=invoke,
                settings=settings,
                effective=effective,
                concurrency=workers,
                progress=progress,
                skip_blank_lines=skip_blank_lines,
                takes_out_set_aside=not marks_in_output,
            )

        at_once = files_at_once(settings.split_type, workers)
        outcomes = take_files(files, 1, work, progress, at_once=at_once)
    return [
        {"name": o.file.name, "stats": o.stats and asdict(o.stats), "error": o.error}
        for o in outcomes
    ]


def job_inputs(input_dir: Path, ranges: Sequence[InputFile]) -> list[InputFile]:
    """Every file the job staged under ``input_dir`` (each one an input) and ``ranges``, by
    name; an InputError when there are none."""
    staged = input_dir.is_dir() and any(p.is_file() for p in input_dir.rglob("*"))
    found = collect_inputs([input_dir], every_file=True) if staged or not ranges else []
    return sorted([*found, *ranges], key=lambda file: file.name)


def _dealt_gpus(workers: int, context: Any) -> Any:
    """A queue of this instance's GPUs dealt in turn to ``workers`` workers, which each take
    one as they start (as the model server pins its workers); None without GPUs."""
    gpus = visible_gpus(os.environ)
    if not gpus:
        return None
    dealt = context.Queue()
    for n in range(workers):
        dealt.put(gpus[n % len(gpus)])
    return dealt


def _check_writable(output_dir: Path) -> None:
    """Fail before any work when the output directory cannot be written (the image runs as
    a non-root user; a mount it does not own would otherwise fail every file)."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=output_dir).close()
    except OSError as exc:
        raise BatchInferError(
            f"output directory {output_dir} is not writable by uid {os.getuid()}: {exc}"
        ) from exc


def failure_message(results: list[dict[str, object]]) -> str | None:
    """The job's failure reason when any file failed (P8), else None."""
    errors = [str(r["error"]) for r in results if r["error"]]
    if not errors:
        return None
    return f"{len(errors)} of {len(results)} files failed. " + "; ".join(errors)


def write_message(message_file: Path, message: str) -> None:
    """The first KB of ``message`` where SageMaker reads a job's ExitMessage (P8)."""
    try:
        message_file.parent.mkdir(parents=True, exist_ok=True)
        message_file.write_bytes(message.encode()[:MESSAGE_LIMIT])
    except OSError as exc:
        print(f"cannot write {message_file}: {exc}", file=sys.stderr)


class JsonLinesProgress(Progress):
    """Progress as JSON lines on stdout, for the local processing engine to relay:
    ``{"file": name}`` when a file starts, ``{"file": name, "done": bytes}`` after a request."""

    def file_started(self, instance: int, file: InputFile) -> None:
        _line({"file": file.name})

    def file_progress(self, instance: int, file: InputFile, done: int) -> None:
        _line({"file": file.name, "done": done})


def _line(value: dict[str, object]) -> None:
    """One JSON line on stdout, written whole (files run in threads)."""
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()
