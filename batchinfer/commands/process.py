"""``batchinfer process``: the image's Processing-job mode (spec P1-P8: how SageMaker runs a
Processing job)."""

import json
import os
import signal
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from batchinfer.engine.worker_server import default_workers, start_worker_server
from batchinfer.errors import BatchInferError, ValidationError
from batchinfer.model_artifact import prepare_model_dir
from batchinfer.parent_death import die_with_starter
from batchinfer.serving.server import GRACEFUL_TIMEOUT
from batchinfer.transform.settings import TransformSettings

# How long an instance whose engine is gone has before SIGALRM ends it.
ORPHAN_EXIT_SECONDS = 1


def process(
    settings_json: Annotated[
        str,
        typer.Option(
            "--settings-json",
            help='Transform settings as snake_case JSON, e.g. \'{"content_type": "text/csv"}\'.',
        ),
    ] = "{}",
    input_dir: Annotated[Path, typer.Option(help="Files to transform.")] = Path(
        "/opt/ml/processing/input/data"
    ),
    input_ranges: Annotated[
        Path | None,
        typer.Option(
            help="A JSON list of byte ranges of local files to transform too, each "
            '{"path", "name", "start", "end"}: shards read in place (the local engine).',
        ),
    ] = None,
    model_dir: Annotated[Path, typer.Option(help="Model directory or model.tar.gz.")] = Path(
        "/opt/ml/processing/input/model"
    ),
    output_dir: Annotated[Path, typer.Option(help="Where the .out files go.")] = Path(
        "/opt/ml/processing/output"
    ),
    workers: Annotated[int | None, typer.Option(help="Worker processes (default: cores).")] = None,
    report: Annotated[Path | None, typer.Option(help="Write per-file results as JSON.")] = None,
    message_file: Annotated[Path, typer.Option(help="Failure reason for SageMaker (P8).")] = Path(
        "/opt/ml/output/message"
    ),
    progress: Annotated[bool, typer.Option(help="Print progress as JSON lines on stdout.")] = False,
    skip_blank_lines: Annotated[
        bool, typer.Option(help="Drop empty lines before batching (split type Line).")
    ] = False,
    marks_in_output: Annotated[
        bool,
        typer.Option(
            help="With bad_records quarantine: leave the marker lines of records set aside "
            "in the outputs, as a transform job's output holds them (the pipeline takes "
            "them out), instead of writing errors files."
        ),
    ] = False,
) -> None:
    """Transform every input file in-process with all cores, as a transform job would."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    die_with_starter(os.environ, _exit_orphaned)
    try:
        try:
            request = json.loads(settings_json)
        except ValueError as exc:
            raise ValidationError(f"--settings-json: not JSON: {exc}") from None
        settings = TransformSettings.from_request(request)
        workers = workers or default_workers()
        with tempfile.TemporaryDirectory(prefix="batchinfer-model-") as scratch:
            model = prepare_model_dir(model_dir, Path(scratch))  # a job's is a model.tar.gz
            # Its workers' imports start now, beside this process's own below.
            start_worker_server(workers, model, settings.job_environment)
            from batchinfer.engine.inputs import load_ranges
            from batchinfer.engine.processing_job import (  # model libraries: only to process
                JsonLinesProgress,
                current_host,
                failure_message,
                run_processing_job,
                write_message,
            )

            results = run_processing_job(
                input_dir,
                output_dir,
                model_dir=model,
                settings=settings,
                workers=workers,
                progress=JsonLinesProgress() if progress else None,
                skip_blank_lines=skip_blank_lines,
                marks_in_output=marks_in_output,
                ranges=load_ranges(input_ranges) if input_ranges else (),
            )
    except BatchInferError as exc:
        from batchinfer.engine.processing_job import write_message

        write_message(message_file, str(exc))  # P8: the reason reaches DescribeProcessingJob
        raise
    if report is not None:
        report.write_text(json.dumps(results, indent=2) + "\n")
    failure = failure_message(results)
    typer.echo(f"{current_host()}: {len(results)} files, {'failed' if failure else 'ok'}", err=True)
    if failure:
        write_message(message_file, failure)
        typer.echo(failure, err=True)
        raise typer.Exit(1)


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    """SageMaker stops a job with SIGTERM (as Ctrl-C stops a local run): exit through the
    cleanup that removes the temporary output of a file in work, so none is left behind.
    Requests in flight get ``GRACEFUL_TIMEOUT`` seconds, as the model server's do (C10: the
    container gets SIGTERM, then SIGKILL 30 s later); then SIGALRM ends the job, and its
    workers with it."""
    signal.alarm(GRACEFUL_TIMEOUT)
    raise SystemExit(128 + signum)


def _exit_orphaned(signum: int, _frame: object) -> None:
    """The local engine that started this instance is gone (even killed with ``kill -9``),
    and with it the reader of every answer: exit as on SIGTERM, but SIGALRM ends the job
    a second later, a request in flight or not. What it leaves is in the run's working
    folder, which the next run into that output removes."""
    signal.alarm(ORPHAN_EXIT_SECONDS)
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    # ``python -m batchinfer.commands.process``: this command alone, without importing the
    # others, so that a local processing instance starts sooner (as the model server does).
    from batchinfer.commands.typer_app import run_alone

    run_alone(process, "batchinfer process")
