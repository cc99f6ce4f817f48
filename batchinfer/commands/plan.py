"""``batchinfer plan``: objects, shards, record sizes, warnings, and with a model the
duration and cost of the job, before it runs."""

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from batchinfer import api
from batchinfer.cloud.aws_errors import aws_errors
from batchinfer.commands import figures
from batchinfer.commands import transform_options as opt
from batchinfer.commands.input_options import Exclude, Include, SkipBlankLines
from batchinfer.commands.run import parse_shards
from batchinfer.commands.transform_options import option_name
from batchinfer.endpoints.targets import DEFAULT_ENDPOINT_CONCURRENCY
from batchinfer.errors import ValidationError
from batchinfer.instances.prices import parse_price_overrides
from batchinfer.planning.endpoint_estimate import EndpointEstimate
from batchinfer.planning.job_plan import (
    DEFAULT_SAMPLE_RECORDS,
    Plan,
    largest_record,
)
from batchinfer.planning.tune import PASSES, TunePoint, point_environment, recommend
from batchinfer.planning.tune_plot import check_plotting, write_plot
from batchinfer.transform.server_limits import MAX_BATCH_RECORDS_VAR
from batchinfer.units import MIB

FILES_SHOWN = 20


@aws_errors()  # S3 inputs: an AWS failure is its one-line message and exit code (4-9)
@opt.transform_options
def plan(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="Files, directories, a ManifestFile, or s3:// prefixes.", show_default=False
        ),
    ],
    shards: Annotated[
        str | None, typer.Option(help="Pre-split each input into N shards, or 'auto'.")
    ] = None,
    shard_size: Annotated[
        str | None, typer.Option(help="Pre-split into shards of about this size, e.g. 64MiB.")
    ] = None,
    merge: Annotated[bool, typer.Option(help="Plan one merged output per input.")] = False,
    include: Include = None,
    exclude: Exclude = None,
    skip_blank_lines: SkipBlankLines = False,
    engine: Annotated[
        str,
        typer.Option(
            help="transform (model servers), processing (in-process) or endpoint (an "
            "existing real-time endpoint, scored by the pipeline's Lambdas)."
        ),
    ] = "transform",
    endpoint_concurrency: Annotated[
        int,
        typer.Option(
            help="With --engine endpoint: shards scored at once (the stack's endpoint_concurrency)."
        ),
    ] = DEFAULT_ENDPOINT_CONCURRENCY,
    model: Annotated[
        str | None,
        typer.Option(
            help="Model directory or model.tar.gz, local or s3://: calibrate on a sample."
        ),
    ] = None,
    region: Annotated[
        str | None, typer.Option(help="Region to price in (default: AWS_REGION, else us-east-1).")
    ] = None,
    price: Annotated[
        list[str] | None,
        typer.Option(help="TYPE=USD_PER_HOUR: use this hourly price (repeatable)."),
    ] = None,
    sample_records: Annotated[
        int, typer.Option(help="Records sent through the model to calibrate.")
    ] = DEFAULT_SAMPLE_RECORDS,
    tune: Annotated[
        bool,
        typer.Option(
            help="With --model: sweep MaxPayloadInMB and MaxConcurrentTransforms on the "
            "sample and recommend the fastest pair that fits the payload rule."
        ),
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            help="With --tune: also draw the measured curve as a PNG at this path "
            "(needs matplotlib: pip install 'batchinfer[plot]').",
            show_default=False,
        ),
    ] = None,
    throughput: Annotated[
        float | None,
        typer.Option(
            help="Rows/s of one instance of --instance-type, measured on one: the speed to "
            "estimate with instead of this machine's (a GPU type needs it).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    header: opt.Header = False,
    delimiter: opt.Delimiter = None,
    encoding: opt.Encoding = None,
    max_batch_records: opt.MaxBatchRecords = None,
    *,
    transform: dict[str, Any],
) -> None:
    """What a job over INPUT would do and cost: objects, shards, the largest record against
    MaxPayloadInMB, common mistakes, and with --model a measured throughput, the duration
    per instance and the cost. Nothing is written."""
    if plot is not None:
        if not tune:
            raise ValidationError("--plot: needs --tune (it draws the tuning curve)")
        if not plot.parent.is_dir():
            raise ValidationError(f"--plot {plot}: no such directory {plot.parent}")
        check_plotting()
    status = Console(stderr=True, quiet=as_json)
    transform = opt.with_batch_records(transform, max_batch_records)
    result = api.plan(
        inputs,
        model=model,
        engine=engine,
        shards=parse_shards(shards),
        shard_size=shard_size,
        merge=merge,
        header=header,
        delimiter=delimiter,
        encoding=encoding,
        include=include or (),
        exclude=exclude or (),
        skip_blank_lines=skip_blank_lines,
        region=region,
        prices=parse_price_overrides(price),
        sample_records=sample_records,
        tune=tune,
        endpoint_concurrency=endpoint_concurrency,
        throughput=throughput,
        on_stage=lambda s: status.print(f"[dim]{s}…[/]"),
        on_point=lambda p: status.print(f"[dim]  {_point_label(p)}: {_point_value(p)}[/]"),
        **transform,
    )
    if plot is not None:
        if result.tuning is None:
            said = Text(f"tune: no curve drawn in {plot}: nothing was measured", style="yellow")
        else:
            write_plot(result.tuning, plot)
            said = Text(f"tune: curve drawn in {plot}")
        status.print(said, highlight=False, soft_wrap=True)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        show(Console(soft_wrap=True), result)


def show(console: Console, plan: Plan) -> None:
    """The plan for people."""
    settings = plan.request.settings

    def line(*parts: str, style: str = "") -> None:
        console.print(Text("".join(parts), style=style), highlight=False)

    job = plan.job
    assert job is not None, "make_plan estimates every plan it returns"
    records = "" if plan.records is None else f", {figures.count(plan.records, 'record')}"
    if plan.endpoint is not None:
        scored_by = f"through the endpoint, {plan.endpoint.in_flight} requests in flight"
    else:
        scored_by = (
            f"on {job.instances} x {job.instance_type} ({job.busy_instances} busy), "
            f"{job.jobs} {plan.request.engine} job"
        )
    line(
        f"{figures.count(job.objects, 'object')}, {figures.size(job.bytes)}{records} -> "
        f"{figures.count(job.shards, 'shard')} {scored_by}",
        style="bold",
    )
    console.print(_files_table(plan))
    largest = largest_record(plan)
    if largest is not None:
        limit = largest["max_payload_bytes"]
        bound = "0 (no limit)" if limit is None else f"{limit // MIB} ({limit:,} bytes)"
        parquet = next((i for i in plan.inputs if i.name == largest["file"] and i.row_groups), None)
        if parquet is None:
            what = f"largest record: {largest['file']} record {largest['record']}"
        else:
            whole = (
                "a whole Parquet file"
                if parquet.shards == 1
                else f"the largest of its {parquet.shards} shards of whole row groups (from "
                f"row {largest['record']:,}), of a Parquet file"
            )
            what = (
                f"largest request: {largest['file']}, {whole} of "
                f"{figures.count(parquet.records or 0, 'row')} in "
                f"{figures.count(parquet.row_groups or 0, 'row group')} (the largest "
                f"{parquet.largest_row_group:,} bytes)"
            )
        line(
            f"{what}, {largest['bytes']:,} bytes; MaxPayloadInMB {bound}: "
            + ("fits" if largest["fits"] else "TOO LARGE")
        )
    if plan.spec is not None:
        gpus = f", {plan.spec.gpus} x {plan.spec.gpu_model}" if plan.spec.gpus else ", no GPU"
        line(
            f"instance: {settings.instance_type}: {plan.spec.vcpus} vCPUs, "
            f"{plan.spec.memory_gib:g} GiB{gpus}"
        )
    if plan.calibration is not None:
        c = plan.calibration
        line(
            f"calibration: {c.records:,} records ({figures.size(c.bytes)}) in {c.seconds:.2f} s "
            f"on one local {c.engine} instance, {c.busy_cpus} of {c.local_cpus} CPUs busy: "
            f"{c.rows_per_second:,.0f} rows/s"
        )
    if plan.estimate is not None:
        _show_estimate(line, plan)
    if plan.endpoint is not None:
        _show_endpoint(line, plan.endpoint)
    if plan.tuning is not None:
        _show_tuning(line, plan.tuning)
    for warning in plan.warnings:
        line(f"warning: {warning.message}", style="yellow")


BAR_WIDTH = 30


def _show_tuning(line: Any, points: list[TunePoint]) -> None:
    """The measured curve as bars, one per point: MaxPayloadInMB x MaxConcurrentTransforms,
    then forward batches at the pair stage 1 recommended; each the median of its passes with
    their spread."""
    best = recommend(points)
    fastest = max((p.rows_per_second or 0.0 for p in points), default=0.0) or 1.0
    first = (
        "MaxPayloadInMB (records per request) x MaxConcurrentTransforms"
        if not points[0].whole_objects
        else "MaxConcurrentTransforms (one whole object a request)"
    )
    line(
        f"tune: {points[0].unit} on the sample (median of {PASSES} passes, slowest-fastest) by "
        f"{first}, then by records per forward pass, then by workers x threads",
        style="bold",
    )
    labels = [_point_label(point) for point in points]
    width = max(map(len, labels))  # the bars start in one column, after the longest label
    for point, label in zip(points, labels, strict=True):
        bar = ""
        if point.rows_per_second is not None:
            filled = round(BAR_WIDTH * point.rows_per_second / fastest)
            bar = "█" * filled + "·" * (BAR_WIDTH - filled) + " "
        mark = "  <- recommended" if point == best else ""
        line(f"  {label:<{width}} {bar}{_point_value(point)}{mark}")
    if best is None:
        line("tune: no pair fits the payload rule and was measured", style="yellow")
        return
    forward = (
        "" if best.max_batch_records is None else f" --max-batch-records {best.max_batch_records}"
    )
    layout = "".join(
        f" --env {name}={value}"
        for name, value in point_environment(best).items()
        if name != MAX_BATCH_RECORDS_VAR
    )
    line(
        f"recommended: {option_name('max_payload_mb')} {best.max_payload_mb} "
        f"{option_name('max_concurrent_transforms')} {best.max_concurrent_transforms}"
        f"{forward}{layout} ({best.rows_per_second:,.0f} {best.unit} on the sample; the fastest, "
        "or the point needing least memory that the sample cannot tell from it)",
        style="bold",
    )
    if layout:
        line(
            "  (workers and threads as measured on this machine's cores: on an instance, keep "
            "the threads per worker and run vCPUs / threads workers)"
        )


def _point_label(point: TunePoint) -> str:
    request = f"~{point.records_per_request or 0:,} rec"
    if point.whole_objects:
        request = "1 object" + ("" if point.records_per_request is None else f", {request}")
    label = f"{point.max_payload_mb:>3} MB ({request}) x {point.max_concurrent_transforms}"
    if point.max_batch_records is not None:
        label += f", {point.max_batch_records:,} per pass"
    if point.workers is not None and point.threads is not None:
        label += (
            f", {figures.count(point.workers, 'worker')} x {figures.count(point.threads, 'thread')}"
        )
    return label


def _point_value(point: TunePoint) -> str:
    if not point.fits:
        return f"does not fit: {point.reason}"
    return f"{point.rows_per_second:,.0f} {point.unit} ({point.slowest:,.0f}-{point.fastest:,.0f})"


def _show_estimate(line: Any, plan: Plan) -> None:
    e = plan.estimate
    assert e is not None
    busy = ", ".join(figures.duration(s) for s in e.instance_seconds[:FILES_SHOWN])
    more = " ..." if len(e.instance_seconds) > FILES_SHOWN else ""
    speed = (
        f"{figures.size(e.bytes_per_second)}/s"
        if e.rows_per_second is None
        else f"{e.rows_per_second:,.0f} rows/s"
    )
    line(
        f"estimate: {speed} per {e.instance_type} ({e.busy_cpus} "
        f"vCPUs busy); busy per instance: "
        f"{busy}{more}; job: {figures.duration(e.job_seconds)}"
    )
    if e.price is not None and e.cost_usd is not None:
        line(
            f"cost: {figures.decimal(e.instance_hours)} instance-hours x "
            f"${e.price.usd_per_hour:g}/h = {figures.usd(e.cost_usd)} ({e.price.source})",
            style="bold",
        )
    for assumption in e.assumptions:
        line(f"  assumes {assumption}", style="dim")


def _show_endpoint(line: Any, e: EndpointEstimate) -> None:
    requests = (
        "requests: unknown (records not counted)"
        if e.requests is None
        else (f"requests: {figures.count(e.requests, 'InvokeEndpoint request')}")
    )
    took = "" if e.seconds is None else f", about {figures.duration(e.seconds)} at that rate"
    line(f"{requests}, {e.in_flight} in flight{took}", style="bold")
    if e.seconds is None:
        line("  time: needs --model (a measured speed) and local inputs", style="dim")
    for assumption in e.assumptions:
        line(f"  assumes {assumption}", style="dim")


def _files_table(plan: Plan) -> Table:
    table = Table("input", "bytes", "records", "largest record", "shards", box=None)
    for survey in plan.inputs[:FILES_SHOWN]:
        largest = survey.largest
        table.add_row(
            Text(survey.name),
            figures.size(survey.bytes),
            "" if survey.records is None else f"{survey.records:,}",
            "" if largest is None else f"#{largest.number}: {largest.size:,} B",
            str(survey.shards),
        )
    if len(plan.inputs) > FILES_SHOWN:
        table.add_row(Text(f"... {len(plan.inputs) - FILES_SHOWN} more"), "", "", "", "")
    return table
