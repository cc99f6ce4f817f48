"""Running ``batchinfer`` in the test process (so moto's in-process mocks apply)."""

import pytest

from batchinfer.cli import app


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``batchinfer ARGS`` as the console script runs it: errors become a message and their
    exit code. Returns (exit code, stdout + stderr)."""
    try:
        app(list(args), prog_name="batchinfer")
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 1
    else:
        code = 0
    captured = capsys.readouterr()
    return code, captured.out + captured.err
