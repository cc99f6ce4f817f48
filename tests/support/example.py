"""The bundled example (model and CSV input) as ``batchinfer example`` writes it."""

from pathlib import Path

from batchinfer.cli import app


def write_example(directory: Path, rows: int) -> Path:
    try:
        app(["example", str(directory), "--rows", str(rows)], prog_name="batchinfer")
    except SystemExit as exit:
        assert not exit.code, f"batchinfer example exited {exit.code}"
    return directory
