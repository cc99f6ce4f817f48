"""``batchinfer run``: a Batch Transform job on this machine, with the cloud's semantics."""

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape

from batchinfer.api import JobFailed, local_job, run_local_job
from batchinfer.cloud.aws_errors import aws_errors
from batchinfer.commands import transform_options as opt
from batchinfer.commands.figures import count
from batchinfer.commands.input_options import Exclude, Include, SkipBlankLines
from batchinfer.commands.run_display import LiveProgress, summary_notes, summary_table
from batchinfer.engine.job_result import JobInterrupted, JobResult
from batchinfer.engine.stop_signals import exit_code, stop_like_ctrl_c
from batchinfer.errors import ValidationError
from batchinfer.serving.image_imports import imports_note
from batchinfer.transform.assemble import RESULT_MANIFEST
from batchinfer.transform.parquet_footer import MAGIC as PARQUET_MAGIC
from batchinfer.uris import is_s3_uri, parse_s3_uri

SAMPLE_LINES = 3
# A preview line is cut to this many characters, its size said (a JSON array's answer is
# one line of the whole file's predictions): indented, with its size, it fits 80 columns.
PREVIEW_CHARS = 60


@aws_errors()  # S3 inputs, model and output: an AWS failure is one line with its exit code
@opt.transform_options
def run(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="Files, directories, a ManifestFile, or s3:// prefixes.", show_default=False
        ),
    ],
    output: Annotated[str, typer.Option(help="Directory or s3:// prefix for the .out files.")],
    model: Annotated[
        str | None,
        typer.Option(
            help="Model directory or model.tar.gz, local or s3:// (transform and processing "
            "engines)."
        ),
    ] = None,
    shards: Annotated[
        str | None, typer.Option(help="Pre-split each input into N shards, or 'auto'.")
    ] = None,
    merge: Annotated[bool, typer.Option(help="Merge shard outputs into one per input.")] = False,
    engine: Annotated[
        str,
        typer.Option(
            help="transform (HTTP model servers), processing (in-process) or endpoint "
            "(a running server at --endpoint-url)."
        ),
    ] = "transform",
    endpoint_url: Annotated[
        str | None,
        typer.Option(help="http://HOST:PORT of the server that scores with --engine endpoint."),
    ] = None,
    include: Include = None,
    exclude: Exclude = None,
    skip_blank_lines: SkipBlankLines = False,
    overwrite: Annotated[
        bool,
        typer.Option(
            help="Write into an --output that holds files: each output this run writes "
            "replaces the one there, once the first input is done."
        ),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            help="Continue the run that wrote --output (stopped, killed or failed): inputs "
            "whose outputs are whole are kept if the settings and model are unchanged."
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option(help="Print nothing but errors.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run manifest as JSON.")
    ] = False,
    header: opt.Header = False,
    delimiter: opt.Delimiter = None,
    encoding: opt.Encoding = None,
    max_batch_records: opt.MaxBatchRecords = None,
    *,
    transform: dict[str, Any],
) -> None:
    """Run a Batch Transform job locally: same framing, joins, filters, names and failures."""
    transform = opt.with_batch_records(transform, max_batch_records)
    job = local_job(
        inputs,
        output=output,
        model=model,
        engine=engine,
        shards=parse_shards(shards),
        merge=merge,
        header=header,
        delimiter=delimiter,
        encoding=encoding,
        include=include or (),
        exclude=exclude or (),
        skip_blank_lines=skip_blank_lines,
        overwrite=overwrite,
        resume=resume,
        endpoint_url=endpoint_url,
        **transform,
    )
    console = Console(stderr=True, quiet=quiet or as_json)
    failed: JobFailed | None = None
    with stop_like_ctrl_c() as received:
        try:
            with LiveProgress(console, job.settings.instance_count) as progress:
                result = run_local_job(
                    job, progress, on_stage=lambda s: console.print(f"[dim]{s}…[/]")
                )
        except JobFailed as exc:
            result, failed = exc.result, exc
        except KeyboardInterrupt as exc:
            _interrupted(output, exc.result if isinstance(exc, JobInterrupted) else None)
            raise typer.Exit(exit_code(received)) from None
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    elif not quiet:
        _report(Console(), result)
    if failed is not None:
        for line in failed.lines:
            Console(stderr=True, soft_wrap=True).print(
                f"[red]FAILED[/] {escape(line)}", highlight=False
            )
        raise typer.Exit(failed.exit_code)


HANDLER_PROTOCOL = (
    "SageMaker's handler protocol (model_fn, input_fn, predict_fn, output_fn): it runs "
    "unchanged in batchinfer's image and in AWS's scikit-learn, XGBoost and PyTorch "
    "inference images (framework_image in the stack's configuration)"
)


def _at(output: str, name: str) -> str:
    """The file ``name`` in the output directory or S3 prefix ``output``."""
    return parse_s3_uri(output).child(name).uri if is_s3_uri(output) else str(Path(output) / name)


def _interrupted(output: str, result: JobResult | None) -> None:
    """Say what Ctrl-C left: the instances (model servers) are stopped, there is no _SUCCESS."""
    said = "interrupted: every instance is stopped; no _SUCCESS"
    if result is not None:
        done = sum(f.status == "SUCCEEDED" for f in result.files)
        said += (
            f"; {done} of {count(len(result.files), 'input')} done, as "
            f"{_at(output, RESULT_MANIFEST)} records (the others left no output); the same "
            "command with --resume goes on from there"
        )
    Console(stderr=True, soft_wrap=True).print(f"[red]{escape(said)}[/]", highlight=False)


def _report(console: Console, result: JobResult) -> None:
    console.print(summary_table(result))
    for line in summary_notes(result):
        console.print(f"[dim]{escape(line)}[/]", highlight=False)
    if result.user_module:
        missing = imports_note(result.user_module, result.user_module_missing_imports)
        said = missing or f"{result.user_module} follows {HANDLER_PROTOCOL}"
        console.print(f"model: {escape(said)}", highlight=False)
    first = next((f for f in result.files if f.outputs), None)
    if first is None:
        return
    if is_s3_uri(result.output_dir):
        said = f"outputs: {count(len(result.files), 'input')} in {result.output_dir}"
        console.print(escape(said), highlight=False)
        return
    path = Path(result.output_dir) / first.outputs[0]
    with path.open("rb") as handle:
        parquet = handle.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC
    lines = parquet_preview(path) if parquet else preview(path)
    what = (
        count(len(lines) - 1, "row") + " of a Parquet file"
        if parquet
        else count(len(lines), "line")
    )
    console.print(f"[bold]{escape(str(path))}[/] (first {what}):", highlight=False)
    for line in lines:
        console.print("  " + line, highlight=False, markup=False)


def parquet_preview(path: Path) -> list[str]:
    """The column names of the Parquet file ``path``, then its first :data:`SAMPLE_LINES`
    rows, comma-separated, each cut to :data:`PREVIEW_CHARS` characters."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as parquet:
        rows = next(parquet.iter_batches(batch_size=SAMPLE_LINES), None)
        names = parquet.schema_arrow.names
    records = [] if rows is None else rows.to_pylist()
    lines = [", ".join(names)] + [", ".join(str(v) for v in r.values()) for r in records]
    return [line if len(line) <= PREVIEW_CHARS else line[:PREVIEW_CHARS] + "…" for line in lines]


def preview(path: Path) -> list[str]:
    """The first :data:`SAMPLE_LINES` lines of ``path``, each cut to :data:`PREVIEW_CHARS`
    characters and then saying its size; a long line is counted, never held whole."""
    lines: list[str] = []
    with path.open("rb") as handle:
        while len(lines) < SAMPLE_LINES and (head := handle.readline(4 * PREVIEW_CHARS)):
            size, end = len(head), head
            while not end.endswith(b"\n") and (end := handle.readline(1 << 20)):
                size += len(end)
            text = head.decode("utf-8", "replace").rstrip("\r\n")
            if size > len(head) or len(text) > PREVIEW_CHARS:
                size -= len(end) - len(end.rstrip(b"\r\n"))  # the line ending is no content
                text = f"{text[:PREVIEW_CHARS]}… ({size:,} bytes)"
            lines.append(text)
    return lines


def parse_shards(value: str | None) -> int | Literal["auto"] | None:
    """``--shards``: a whole number, 'auto' or not given."""
    if value is None:
        return None
    if value == "auto":
        return "auto"
    try:
        return int(value)
    except ValueError:
        raise ValidationError(f"--shards must be a whole number or 'auto', not {value!r}") from None
