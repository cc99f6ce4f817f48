"""What an engine reports (per-file outcomes, progress callbacks), and the per-file step
every engine shares: one input to its `.out`, a failure recorded as an outcome (R19)."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from batchinfer.engine.inputs import InputFile
from batchinfer.errors import BatchInferError
from batchinfer.transform.assemble import output_name
from batchinfer.transform.file_transform import FileStats, Invoke, transform_file
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


class Progress:
    """Callbacks the engine makes as it works; the CLI draws them, tests may record them."""

    def job_started(self, total_bytes: int) -> None:
        """The inputs are known: ``total_bytes`` in all."""

    def instances_ready(self, count: int) -> None:
        """All model servers answered /ping."""

    def file_started(self, instance: int, file: InputFile) -> None:
        """An instance took a file."""

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
) -> FileOutcome:
    """Transform one input into ``<output_dir>/<name>.out``; a failure is an outcome (R19)."""
    return file_outcome(
        file,
        output_dir,
        instance,
        lambda output: transform_file(
            file.path,
            output,
            settings=settings,
            effective=effective,
            invoke=invoke,
            name=file.name,
            concurrency=concurrency,
        ),
    )


def file_outcome(
    file: InputFile, output_dir: Path, instance: int, write: Callable[[Path], FileStats]
) -> FileOutcome:
    """``write(output)`` for one input's ``<output_dir>/<name>.out``, which it writes only
    when every record succeeded; a failure is an outcome naming the file (R19)."""
    output = output_dir / output_name(file.name)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)  # R19: no stale .out for a file that fails this time
    try:
        stats = write(output)
    except BatchInferError as exc:
        return FileOutcome(file, instance, output, error=str(exc))
    except OSError as exc:  # e.g. a full disk: this file fails, the others go on
        return FileOutcome(file, instance, output, error=f"{file.name}: {exc}")
    return FileOutcome(file, instance, output, stats=stats)
