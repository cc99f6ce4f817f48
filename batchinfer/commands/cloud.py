"""``batchinfer submit``, ``status`` and ``runs``: operate a deployed pipeline stack.

The stack's resources come from its CloudFormation outputs (``--stack`` or
``BATCHINFER_STACK``); requests use the state machine's snake_case keys. AWS failures
are reported as one line with their exit code (:mod:`batchinfer.cloud.aws_errors`).
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from batchinfer.cloud.actuals import actual
from batchinfer.cloud.aws_errors import aws_errors
from batchinfer.cloud.runs import (
    RUN_KEYS,
    SHARD_KEYS,
    as_json,
    console_link,
    get_run,
    list_runs,
    start_run,
    watch_run,
)
from batchinfer.cloud.stack import DeployedStack
from batchinfer.commands import figures
from batchinfer.commands import transform_options as opt
from batchinfer.commands.input_options import Exclude, Include
from batchinfer.engines import parse_engine
from batchinfer.errors import ValidationError
from batchinfer.pipeline.jobs.run_estimate import ESTIMATE_KEY, EstimateRequest
from batchinfer.pipeline.jobs.run_request import RunRequest
from batchinfer.pipeline.storage.status_table import RUN_STATUSES
from batchinfer.transform.bad_records import ERRORS_SUFFIX
from batchinfer.transform.csv_dialect import with_table
from batchinfer.transform.settings import TransformSettings
from batchinfer.uris import parse_s3_uri

Stack = Annotated[
    str,
    typer.Option(
        "--stack", envvar="BATCHINFER_STACK", help="The pipeline stack's name.", show_default=False
    ),
]
Region = Annotated[str | None, typer.Option(help="AWS region (default: your AWS config).")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON (keys listed in docs/operate.md).")]


def _stack(name: str, region: str | None) -> DeployedStack:
    import boto3

    return DeployedStack.find(name, boto3.Session(region_name=region))


@aws_errors()
@opt.transform_options
def submit(
    stack: Stack,
    input: Annotated[str, typer.Option("--input", help="s3:// prefix of the input objects.")],
    output: Annotated[str | None, typer.Option(help="s3:// prefix for the results.")] = None,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: a new one).")] = None,
    engine: Annotated[str | None, typer.Option(help="transform, processing or endpoint.")] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="With --engine endpoint: one of the stack's endpoints (default: its first)."
        ),
    ] = None,
    shards: Annotated[int | None, typer.Option(help="Shards per input object.")] = None,
    shard_size: Annotated[str | None, typer.Option(help="Shard size, e.g. 64MiB.")] = None,
    include: Include = None,
    exclude: Exclude = None,
    header: Annotated[
        bool | None,
        typer.Option(
            "--header/--no-header",
            help="Inputs start with a header row: no record; its names reach the model.",
            rich_help_panel=opt.TABLE_PANEL,
        ),
    ] = None,
    delimiter: opt.Delimiter = None,
    encoding: opt.Encoding = None,
    merge: Annotated[
        bool | None, typer.Option("--merge/--no-merge", help="One output per input object.")
    ] = None,
    region: Region = None,
    estimate_model: Annotated[
        Path | None,
        typer.Option(
            help="Model directory or model.tar.gz: measure its throughput on "
            "--estimate-sample so the run's status holds a duration and cost estimate."
        ),
    ] = None,
    estimate_sample: Annotated[
        Path | None,
        typer.Option(help="Local files like the input's, to measure the throughput on."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check and print the request; start nothing.")
    ] = False,
    max_batch_records: opt.MaxBatchRecords = None,
    *,
    transform: dict[str, Any],
) -> None:
    """Start a run on the stack; print its run id and console link. Options left out take
    the stack's defaults. The request is checked here as the state machine's Plan checks it,
    except what depends on the stack's defaults (the Plan checks that). With
    --estimate-model the request carries the throughput measured as ``batchinfer plan``
    measures it."""
    parse_s3_uri(input, field="--input")
    if output is not None:
        parse_s3_uri(output, field="--output")
    values: dict[str, Any] = {
        "input": input,
        "output": output,
        "run_id": run_id,
        "engine": engine,
        "endpoint": endpoint,
        "shards": shards,
        "shard_size": shard_size,
        "include": include,
        "exclude": exclude,
        "header": header,
        "merge": merge,
    }
    transform = with_table(transform, delimiter, encoding)
    transform = opt.with_batch_records(transform, max_batch_records)
    request = {key: value for key, value in values.items() if value is not None} | transform
    if (estimate_model is None) != (estimate_sample is None):
        raise ValidationError("--estimate-model, --estimate-sample: give both or neither")
    RunRequest.parse(request)  # the request's own mistakes first, before measuring or AWS
    if estimate_model is not None and estimate_sample is not None:
        request[ESTIMATE_KEY] = measured_throughput(
            estimate_model, estimate_sample, request.get("engine", "transform"), transform
        )
        RunRequest.parse(request)
    deployed = _stack(stack, region)
    state_machine = deployed.state_machine_arn
    if dry_run:
        typer.echo(json.dumps({"state_machine_arn": state_machine, "request": request}, indent=2))
        typer.echo(
            "dry run: nothing started; the Plan still checks what depends on the stack's defaults",
            err=True,
        )
        return
    started_id, execution = start_run(deployed, request)
    typer.echo(f"run id:    {started_id}")
    typer.echo(f"execution: {execution}")
    typer.echo(f"console:   {console_link(execution)}")


def measured_throughput(
    model: Path, sample: Path, engine: str, transform: dict[str, Any]
) -> dict[str, Any]:
    """The request's ``estimate``: the model's throughput on ``sample``, calibrated as
    ``batchinfer plan --model`` calibrates it."""
    from batchinfer.planning.job_plan import PlanRequest, make_plan

    request = PlanRequest(
        inputs=[str(sample)],
        settings=TransformSettings.from_request(transform),
        engine=parse_engine(engine),
        model=model,
    )
    Console(stderr=True).print("[dim]measuring the model's throughput on the sample…[/]")
    plan = make_plan(request)
    if plan.calibration is None:
        reasons = "; ".join(w.message for w in plan.warnings) or "no records"
        raise ValidationError(f"--estimate-sample {sample}: no throughput measured: {reasons}")
    return EstimateRequest(plan.calibration.throughput).to_request()


@aws_errors()
def status(
    run_id: Annotated[str, typer.Argument(help="The run id.", show_default=False)],
    stack: Stack,
    watch: Annotated[bool, typer.Option(help="Refresh until the run ends.")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between refreshes.")] = 5.0,
    region: Region = None,
    as_json_: Json = False,
) -> None:
    """The run, its estimate beside what it took, and its shards (status, attempts, record
    counts, failures). --json prints {"run": {...}, "actual": {...}, "shards": [...]}; with
    --watch, one such line per refresh."""
    deployed = _stack(stack, region)
    table = deployed.status_table()

    def read() -> dict[str, Any]:
        return get_run(deployed, table, run_id)

    if as_json_:

        def show(run: dict[str, Any]) -> None:
            shards = [as_json(item, SHARD_KEYS) for item in table.shards(run_id)]
            document = {"run": as_json(run, RUN_KEYS), "actual": actual(run), "shards": shards}
            typer.echo(json.dumps(document, indent=None if watch else 2))

        if watch:
            watch_run(read, show, interval)
        else:
            show(read())
        return

    def view(run: dict[str, Any]) -> Group:
        return Group(run_table(run), estimate_table(run), shard_table(table.shards(run_id)))

    console = Console()
    if not watch:
        console.print(view(read()))
        return
    with Live(console=console, auto_refresh=False) as live:
        watch_run(read, lambda run: live.update(view(run), refresh=True), interval)


@aws_errors()
def runs(
    stack: Stack,
    run_status: Annotated[
        str | None, typer.Option("--status", help=f"One of {', '.join(RUN_STATUSES)}.")
    ] = None,
    limit: Annotated[int, typer.Option(help="Newest runs to show.")] = 20,
    region: Region = None,
    as_json_: Json = False,
) -> None:
    """The stack's runs, newest first (with --json: a list of run objects)."""
    if run_status is not None and run_status.upper() not in RUN_STATUSES:
        raise ValidationError(f"--status: {run_status!r} is not one of {', '.join(RUN_STATUSES)}")
    table = _stack(stack, region).status_table()
    found = list_runs(table, run_status.upper() if run_status else None, limit)
    if as_json_:
        typer.echo(json.dumps([as_json(run, RUN_KEYS) for run in found], indent=2))
        return
    view = Table("run id", "status", "started", "finished", "shards", "records out", "error")
    for run in found:
        view.add_row(
            _text(run["run_id"]),
            _status(run.get("run_status")),
            _text(run.get("started_at")),
            _text(run.get("finished_at")),
            _done(run),
            _text(run.get("records_out")),
            _text(run.get("error")),
        )
    Console().print(view)


def run_table(run: dict[str, Any]) -> Table:
    view = Table(title=Text(f"run {run['run_id']}"), show_header=False)
    rows = [
        ("status", _status(run.get("run_status"))),
        ("started", run.get("started_at")),
        ("finished", run.get("finished_at")),
        ("input", run.get("input")),
        ("output", run.get("output")),
        ("engine", run.get("engine")),
        ("shards done", _done(run)),
        ("input rows", run.get("rows")),  # Parquet: Plan read them from the footers
        ("records in / out", f"{_text(run.get('records_in'))} / {_text(run.get('records_out'))}"),
        ("records set aside", _set_aside(run)),
        ("error", run.get("error")),
        ("cause", run.get("cause")),
        ("failed job", run.get("failed_job")),
        ("failed shards", _failed_shards(run)),
        ("execution", run.get("execution_arn")),
    ]
    for label, value in rows:
        if value not in (None, ""):
            view.add_row(label, value if isinstance(value, Text) else _text(value))
    return view


def _set_aside(run: dict[str, Any]) -> str | None:
    """The records the model refused that were set aside, and where (bad_records
    quarantine); None without quarantine."""
    count = run.get("records_quarantined")
    if not count:
        return None if count is None else "0"
    return f"{count}, named in each output's {ERRORS_SUFFIX} (see the manifest)"


def _failed_shards(run: dict[str, Any]) -> str:
    """The failed shards the run names; the recorder names at most a few, found reading a
    bounded number of shards, and says when more may have failed."""
    names = ", ".join(run.get("failed_shards") or [])
    if not run.get("failed_shards_cut"):
        return names
    return f"{names}, and maybe more (see the shards)" if names else "none named: not all were read"


def estimate_table(run: dict[str, Any]) -> Table:
    """Plan's estimate beside what the run took (instance-hours and cost: at most)."""
    estimate, taken = as_json(run, ("estimate",))["estimate"] or {}, actual(run)
    view = Table("", "estimate", "actual", title=Text("estimate and actual"))
    instances = (
        "" if taken["instances"] is None else f"{taken['instances']} x {taken['instance_type']}"
    )
    seconds = estimate.get("job_seconds")
    so_far = "" if taken["finished"] else " so far"
    rows = [
        ("objects", estimate.get("objects"), run.get("objects")),
        (
            "bytes",
            _figure(figures.size, estimate.get("bytes")),
            _figure(figures.size, run.get("bytes")),
        ),
        ("shards", estimate.get("shards"), taken["shards"]),
        (
            "instances",
            f"{estimate.get('instances')} x {estimate.get('instance_type')}" if estimate else None,
            instances,
        ),
        (
            "duration",
            "needs a measured throughput"
            if estimate and seconds is None
            else _figure(figures.duration, seconds),
            _figure(figures.duration, taken["duration_seconds"]) + so_far,
        ),
        (
            "instance-hours",
            _figure(figures.decimal, estimate.get("instance_hours")),
            _at_most(figures.decimal, taken["instance_hours_at_most"]),
        ),
        (
            "cost",
            _figure(figures.usd, estimate.get("cost_usd")),
            _at_most(figures.usd, taken["cost_usd_at_most"]),
        ),
        (
            "price",
            _figure(_hourly, estimate.get("usd_per_hour")),
            _figure(_hourly, taken["usd_per_hour"]),
        ),
        (
            "records in / out",
            _text(run.get("rows")),  # Parquet: the rows Plan read from the footers
            f"{_text(taken['records_in'])} / {_text(taken['records_out'])}",
        ),
    ]
    for label, expected, got in rows:
        view.add_row(label, _text(expected), _text(got))
    return view


def _figure(show: Callable[[Any], str], value: Any) -> str:
    return "" if value is None else show(value)


def _at_most(show: Callable[[Any], str], value: Any) -> str:
    return "" if value is None else f"at most {show(value)}"


def _hourly(usd: float) -> str:
    return f"${usd:g}/h"


def shard_table(items: list[dict[str, Any]]) -> Table:
    view = Table(
        "shard", "name", "status", "attempts", "records in", "records out", "set aside", "job"
    )
    for item in items:
        view.add_row(
            _text(item.get("shard")),
            _text(item.get("name")),
            _status(item.get("status")),
            _text(item.get("attempts")),
            _text(item.get("records_in")),
            _text(item.get("records_out")),
            _text(item.get("records_quarantined")),
            _text(item.get("job_name") or item.get("reason")),
        )
    return view


_COLOURS = {
    "SUCCEEDED": "green",
    "FAILED": "red",
    "MISSING": "red",
    "ABORTED": "red",
    "REJECTED": "red",
    "RUNNING": "yellow",
}


def _status(value: Any) -> Text:
    plain = _text(value).plain
    return Text(plain, style=_COLOURS.get(plain, ""))


def _done(run: dict[str, Any]) -> Text:
    if run.get("shards") is None:
        return Text("")
    return Text(f"{run.get('shards_done', 0)}/{run['shards']}")


def _text(value: Any) -> Text:
    """A value as text shown as it is (never read as rich markup)."""
    return Text("" if value is None else str(value))
