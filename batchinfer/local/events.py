"""What an engine reports: per-file outcomes, and progress callbacks as it works."""

from dataclasses import dataclass
from pathlib import Path

from batchinfer.local.inputs import InputFile
from batchinfer.transform.file_transform import FileStats
from batchinfer.transform.settings import EffectiveSettings


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

    def instances_ready(self, count: int) -> None:
        """All model servers answered /ping."""

    def file_started(self, instance: int, file: InputFile) -> None:
        """An instance took a file."""

    def file_finished(self, outcome: FileOutcome) -> None:
        """A file succeeded or failed."""
