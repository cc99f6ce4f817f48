"""Reading what both sides wrote, for byte-for-byte comparison."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What `batchinfer run` writes beside the outputs (the platform writes neither).
RUN_FILES = frozenset({"_manifest.json", "_SUCCESS"})


@dataclass(frozen=True)
class BatchinferRun:
    """One `batchinfer run`: its exit code, what it printed and its ``_manifest.json``."""

    exit_code: int
    said: str
    manifest: dict[str, Any]

    def records_in(self) -> dict[str, int | None]:
        """Records read per input file, by the file's name."""
        return {f["name"]: f["records_in"] for f in self.manifest["files"]}


def output_tree(root: Path) -> dict[str, bytes]:
    """Every output file below ``root`` by its relative path, without batchinfer's run files."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name not in RUN_FILES
    }


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    """Write ``files`` (relative path -> bytes) below ``root``; returns ``root``."""
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def line_count(data: bytes) -> int:
    """Records of a Line-split body: lines, counting an unterminated last one."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
