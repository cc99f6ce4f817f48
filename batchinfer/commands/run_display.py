"""What ``batchinfer run`` shows a person: live progress bars and a summary table."""

import gzip
import threading
from pathlib import Path

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.table import Table
from rich.text import Text

from batchinfer.commands.figures import abbreviated, count
from batchinfer.engine.inputs import InputFile
from batchinfer.engine.job_result import JobResult
from batchinfer.engine.outcomes import FileOutcome, Progress
from batchinfer.media_types import CSV, JSONLINES, media_type
from batchinfer.transform.bad_records import ERRORS_SUFFIX

LEGEND = (
    "legend: shards = pieces the input was cut into; inst = the instances that ran it "
    "(numbered from 1, as in _manifest.json); rec in/out = records (- where not counted); "
    "MB = input megabytes; s = seconds (of its slowest shard); rows/s = rec in per second; "
    "k, M, G = thousands, millions, billions (exact counts in _manifest.json)"
)
# How much of an input is read for a second line (SplitType None sends the whole file).
_LINES_PROBE_BYTES = 1 << 16


class LiveProgress(Progress):
    """An overall bar and one bar per instance, in bytes, advanced after every request. An
    instance's total is the bytes of the files it has taken so far; its line names the
    file in work and how much of it is done."""

    def __init__(self, console: Console, instances: int) -> None:
        self._bars = RichProgress(
            TextColumn("{task.description}", justify="left"),
            BarColumn(),
            DownloadColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._overall = self._bars.add_task("[bold]all files", total=None)
        self._instances: list[TaskID] = [
            self._bars.add_task(f"instance {i + 1}: starting", total=0) for i in range(instances)
        ]
        self._taken = [0] * instances  # bytes of the files each instance has taken
        self._done: dict[str, int] = {}  # bytes of each file done so far
        self._files = 0
        self._finished = 0
        self._lock = threading.Lock()

    def __enter__(self) -> "LiveProgress":
        self._bars.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            self._bars.update(self._overall, description="[bold red]interrupted")
            for number, task in enumerate(self._instances, 1):
                self._bars.update(task, description=f"instance {number}: stopped")
        self._bars.stop()

    def job_started(self, total_bytes: int) -> None:
        self._bars.update(self._overall, total=total_bytes)

    def instances_ready(self, count: int) -> None:
        for number, task in enumerate(self._instances, 1):
            self._bars.update(task, description=f"instance {number}: ready")

    def file_started(self, instance: int, file: InputFile) -> None:
        with self._lock:
            self._files += 1
            self._taken[instance] += file.size
            self._done[file.name] = 0
            self._bars.update(
                self._instances[instance],
                total=self._taken[instance],
                description=f"instance {instance + 1}: {file.name} 0%",
            )
            self._describe_overall()

    def file_progress(self, instance: int, file: InputFile, done: int) -> None:
        with self._lock:
            self._advance(instance, file, min(done, file.size))
            share = done * 100 // file.size if file.size else 100
            self._bars.update(
                self._instances[instance],
                description=f"instance {instance + 1}: {file.name} {min(share, 100)}%",
            )

    def file_finished(self, outcome: FileOutcome) -> None:
        with self._lock:
            self._advance(outcome.instance, outcome.file, outcome.file.size)
            self._finished += 1
            self._describe_overall()

    def _advance(self, instance: int, file: InputFile, done: int) -> None:
        step = done - self._done.get(file.name, 0)
        if step > 0:
            self._done[file.name] = done
            self._bars.advance(self._overall, step)
            self._bars.advance(self._instances[instance], step)

    def _describe_overall(self) -> None:
        self._bars.update(
            self._overall,
            description=f"[bold]all files[/] {self._finished:,} of {self._files:,} done",
        )


def summary_table(result: JobResult) -> Table:
    """One row per input: where it ran, records in and out, volume, speed, status."""
    table = Table(
        title=f"batchinfer run: {result.status}", title_justify="left", box=box.SIMPLE_HEAD
    )
    # Only the input names fold: the figures and statuses keep whole in 80 columns.
    table.add_column("input", overflow="fold")
    for column in ("shards", "inst", "rec in", "rec out", "MB", "s", "rows/s"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for file in result.files:
        table.add_row(
            Text(file.name),
            str(file.shards or 1),
            _numbers(file.instances),
            _count(file.records_in),
            _count(file.records_out),
            f"{file.bytes_in / 1e6:,.1f}",
            f"{file.seconds:,.2f}",
            _count(file.rows_per_second),
            _status(file.status),
        )
    totals = result.to_json()["totals"]
    table.add_section()
    table.add_row(
        count(totals["files"], "file"),
        "",
        "",
        _count(totals["records_in"]),
        _count(totals["records_out"]),
        f"{totals['bytes_in'] / 1e6:,.1f}",
        f"{result.transform_seconds:,.2f}",
        _count(totals["rows_per_second"]),
        "[green]ok[/]" if result.succeeded else f"[red]{totals['failed']} not done[/]",
    )
    return table


def summary_notes(result: JobResult) -> list[str]:
    """The lines under the table: where the time went, uncounted records, the legend."""
    rest = result.seconds - result.transform_seconds - (result.startup_seconds or 0.0)
    if result.startup_seconds is None:
        startup = "no model servers (each processing instance loads the model in its transform)"
    elif result.endpoint_url is not None:
        startup = f"{result.startup_seconds:,.2f} s until the running server answered /ping"
    else:
        startup = f"{result.startup_seconds:,.2f} s model server start-up"
        if any(f.shards for f in result.files):
            startup += " (the inputs split meanwhile)"
    lines = [
        f"time: {result.seconds:,.2f} s in all = {startup}, {result.transform_seconds:,.2f} s "
        f"transform (the total row), {max(rest, 0.0):,.2f} s other work "
        "(splitting, merging, recording)"
    ]
    reasons = sorted({f.records_not_counted for f in result.files if f.records_not_counted})
    lines += [f"rec out not counted: {reason}" for reason in reasons]
    set_aside = [f for f in result.files if f.records_quarantined]
    if set_aside:
        total = sum(f.records_quarantined or 0 for f in set_aside)
        lines.append(
            f"set aside: {count(total, 'record')} the model refused, not in rec out, each "
            f"with its reason in the errors file beside its output ({ERRORS_SUFFIX}), of "
            f"{count(len(set_aside), 'input')}"
        )
    if result.kept_inputs:
        lines.append(
            f"resumed: {count(result.kept_inputs, 'input')} kept from the run that wrote "
            "the folder (its counts and times are those of that run)"
        )
    whole = _sent_whole(result)
    if whole:
        lines.append(
            f"hint: {', '.join(whole)} went whole as one record (SplitType None, the default) "
            "though it holds more than one line: --split-type Line makes each line a record "
            "(with --assemble-with Line, one output line each)"
        )
    return [*lines, LEGEND]


def _sent_whole(result: JobResult) -> list[str]:
    """The inputs of CSV or JSON Lines that SplitType None sent as one record although they
    hold more than one line."""
    settings = result.settings
    if settings["split_type"] != "None" or media_type(settings["content_type"]) not in {
        CSV,
        JSONLINES,
    }:
        return []
    gzipped = settings["compression_type"] == "Gzip"
    return [f.name for f in result.files if _more_than_one_line(Path(f.input), gzipped)]


def _more_than_one_line(path: Path, gzipped: bool) -> bool:
    try:
        with gzip.open(path) if gzipped else path.open("rb") as handle:
            head = handle.read(_LINES_PROBE_BYTES)
    except (OSError, EOFError):  # gone, or not the gzip it was said to be: nothing to hint
        return False
    return b"\n" in head.rstrip(b"\r\n")


def _status(status: str) -> str:
    if status == "SUCCEEDED":
        return "[green]ok[/]"
    return "[yellow]interrupted[/]" if status == "INTERRUPTED" else "[red]FAILED[/]"


def _count(value: float | None) -> str:
    return "-" if value is None else abbreviated(value)


def _numbers(numbers: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``1-3,5``."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ",".join(
        str(run[0]) if len(run) == 1 else f"{run[0]}{'-' if len(run) > 2 else ','}{run[-1]}"
        for run in runs
    )
