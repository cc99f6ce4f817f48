"""What ``batchinfer run`` shows a person: live progress bars and a summary table."""

import threading

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

from batchinfer.engine.inputs import InputFile
from batchinfer.engine.local_job import JobResult
from batchinfer.engine.outcomes import FileOutcome, Progress


class LiveProgress(Progress):
    """An overall bar (bytes of finished files) and one line per instance."""

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
            self._bars.add_task(f"instance {i + 1}: starting", total=None) for i in range(instances)
        ]
        self._lock = threading.Lock()

    def __enter__(self) -> "LiveProgress":
        self._bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bars.stop()

    def job_started(self, total_bytes: int) -> None:
        self._bars.update(self._overall, total=total_bytes)

    def instances_ready(self, count: int) -> None:
        for task in self._instances:
            self._bars.update(task, description=f"{self._name(task)}: ready")

    def file_started(self, instance: int, file: InputFile) -> None:
        task = self._instances[instance]
        self._bars.update(task, description=f"{self._name(task)}: {file.name}")

    def file_finished(self, outcome: FileOutcome) -> None:
        with self._lock:
            self._bars.advance(self._overall, outcome.file.size)
            self._bars.advance(self._instances[outcome.instance], outcome.file.size)

    def _name(self, task: TaskID) -> str:
        return f"instance {self._instances.index(task) + 1}"


def summary_table(result: JobResult) -> Table:
    """One row per input: where it ran, records in and out, volume, speed, status."""
    table = Table(
        title=f"batchinfer run: {result.status}", title_justify="left", box=box.SIMPLE_HEAD
    )
    table.add_column("input", min_width=min(30, max(len(f.name) for f in result.files)))
    for column in ("shards", "inst", "rec in", "rec out", "MB", "s", "rows/s"):
        table.add_column(column, justify="right")
    table.add_column("status")
    for file in result.files:
        table.add_row(
            Text(file.name),
            str(file.shards or 1),
            ",".join(str(i + 1) for i in file.instances),
            _count(file.records_in),
            _count(file.records_out),
            f"{file.bytes_in / 1e6:,.1f}",
            f"{file.seconds:,.2f}",
            _count(file.rows_per_second),
            "[green]ok[/]" if file.status == "SUCCEEDED" else "[red]FAILED[/]",
        )
    totals = result.to_json()["totals"]
    table.add_section()
    table.add_row(
        f"{totals['files']} files",
        "",
        "",
        _count(totals["records_in"]),
        _count(totals["records_out"]),
        f"{totals['bytes_in'] / 1e6:,.1f}",
        f"{result.seconds:,.2f}",
        _count(totals["rows_per_second"]),
        "[green]ok[/]" if result.succeeded else f"[red]{totals['failed']} failed[/]",
    )
    return table


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
