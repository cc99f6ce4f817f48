"""What an engine reports (per-file outcomes, progress callbacks), and the per-file step
every engine shares: one input to its `.out`, a failure recorded as an outcome (R19: a file with any
failed record gets no output)."""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from batchinfer.engine.inputs import InputFile
from batchinfer.errors import BatchInferError
from batchinfer.transform.assemble import output_name
from batchinfer.transform.bad_records import errors_name
from batchinfer.transform.file_transform import FileStats, OnBytes, transform_file
from batchinfer.transform.retry import Invoke
from batchinfer.transform.settings import EffectiveSettings, TransformSettings


@dataclass(frozen=True)
class FileOutcome:
    """What became of one input file."""

    file: InputFile
    instance: int
    output: Path
    stats: FileStats | None = None
    error: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class EngineReport:
    effective: EffectiveSettings
    outcomes: list[FileOutcome]
    # Seconds until every model server answered /ping (C4: the container is healthy once /ping
    # answers 200), work done while they started (the units given as a function) included; None
    # where there are no servers.
    startup_seconds: float | None = None


class EngineInterrupted(KeyboardInterrupt):
    """Ctrl-C reached the engine: its instances are stopped; ``finished`` holds the files
    that were done before it (an interrupted file is in neither list nor on disk)."""

    def __init__(self, finished: list[FileOutcome]) -> None:
        super().__init__()
        self.finished = finished


class Progress:
    """Callbacks the engine makes as it works; the CLI draws them, tests may record them.
    Instances are numbered from 0 here; people see them from 1."""

    def job_started(self, total_bytes: int) -> None:
        """The inputs are known: ``total_bytes`` in all."""

    def instances_ready(self, count: int) -> None:
        """All model servers answered /ping."""

    def file_started(self, instance: int, file: InputFile) -> None:
        """An instance took a file."""

    def file_progress(self, instance: int, file: InputFile, done: int) -> None:
        """A request of ``file`` is written: ``done`` of its bytes are done so far."""

    def file_finished(self, outcome: FileOutcome) -> None:
        """A file succeeded or failed."""


def transform_input(
    file: InputFile,
    output_dir: Path,
    *,
    instance: int,
    invoke: Invoke,
    settings: TransformSettings,
    effective: EffectiveSettings,
    concurrency: int,
    progress: Progress | None = None,
    skip_blank_lines: bool = False,
    takes_out_set_aside: bool = True,
) -> FileOutcome:
    """Transform one input into ``<output_dir>/<name>.out``; a failure is an outcome (R19).
    ``progress`` hears of the file's bytes after each request; ``skip_blank_lines`` drops
    empty lines; ``takes_out_set_aside`` as :func:`transform_file` takes it."""
    return file_outcome(
        file,
        output_dir,
        instance,
        lambda output: transform_file(
            file.path,
            output,
            byte_range=(file.start, file.end),
            settings=settings,
            effective=effective,
            invoke=invoke,
            name=file.name,
            concurrency=concurrency,
            on_bytes=file_progress(progress, instance, file),
            skip_blank_lines=skip_blank_lines,
            takes_out_set_aside=takes_out_set_aside,
        ),
    )


def file_progress(progress: Progress | None, instance: int, file: InputFile) -> OnBytes | None:
    """What tells ``progress`` how many bytes of ``file`` are done, or None without one."""
    return None if progress is None else partial(progress.file_progress, instance, file)


def file_outcome(
    file: InputFile, output_dir: Path, instance: int, write: Callable[[Path], FileStats]
) -> FileOutcome:
    """``write(output)`` for one input's ``<output_dir>/<name>.out``, which it writes only
    when every record succeeded, once the input is fetched when it must be; a failure is an
    outcome naming the file (R19)."""
    output = output_dir / output_name(file.name)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)  # R19: no stale .out for a file that fails this time
    output.with_name(errors_name(output.name)).unlink(missing_ok=True)
    try:
        if file.fetch is not None:
            file.fetch()
        stats = write(output)
    except BatchInferError as exc:
        return FileOutcome(file, instance, output, error=str(exc))
    except OSError as exc:  # e.g. a full disk: this file fails, the others go on
        return FileOutcome(file, instance, output, error=f"{file.name}: {exc}")
    return FileOutcome(file, instance, output, stats=stats)
