"""Where a local job's outputs land. The job writes each output into its working folder
first and puts it in place only once it is whole (R19: a file with any failed record gets
no output), so a reader of the place never sees a partial output."""

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol


class OutputPlace(Protocol):
    """A folder of outputs, named by paths relative to it (``day1/a.csv.out``)."""

    @property
    def location(self) -> str:
        """The place as the user named it, for messages and ``_manifest.json``."""
        ...

    @property
    def work_parent(self) -> Path | None:
        """Where the job's working folder goes (None: the system's temporary folder)."""
        ...

    def names(self) -> list[str]:
        """Every file below the place, sorted."""
        ...

    def read_text(self, name: str) -> str | None:
        """The text of ``name``, or None when there is none."""
        ...

    def size(self, name: str) -> int | None:
        """The size of ``name`` in bytes, or None when there is none."""
        ...

    def put_file(self, source: Path, name: str) -> None:
        """Make ``source`` the file ``name``, whole or not at all, replacing one there;
        ``source`` may be gone afterwards."""
        ...

    def put_text(self, name: str, text: str) -> None:
        """Write ``name`` whole or not at all, replacing one there."""
        ...

    def remove(self, names: Iterable[str]) -> None:
        """Remove ``names``; one that is not there is no error."""
        ...


class LocalPlace:
    """A local directory; the job's working folder is a hidden folder inside it, so that
    putting an output in place is a rename on one file system."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @property
    def location(self) -> str:
        return str(self.directory)

    @property
    def work_parent(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory

    def names(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(
            path.relative_to(self.directory).as_posix()
            for path in self.directory.rglob("*")
            if not path.is_dir()
        )

    def read_text(self, name: str) -> str | None:
        try:
            return (self.directory / name).read_text()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def size(self, name: str) -> int | None:
        try:
            return (self.directory / name).stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            return None

    def put_file(self, source: Path, name: str) -> None:
        target = self.directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)

    def put_text(self, name: str, text: str) -> None:
        target = self.directory / name
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(text)
        os.replace(partial, target)

    def remove(self, names: Iterable[str]) -> None:
        for name in names:
            (self.directory / name).unlink(missing_ok=True)
