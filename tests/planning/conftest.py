"""Fixtures for plan tests: the bundled example (model and CSV) as ``batchinfer example``
writes it."""

from pathlib import Path

import pytest

from batchinfer.cli import app

EXAMPLE_ROWS = 6000


@pytest.fixture(scope="session")
def example_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("example")
    try:
        app(["example", str(directory), "--rows", str(EXAMPLE_ROWS)], prog_name="batchinfer")
    except SystemExit as exit:
        assert not exit.code, f"batchinfer example exited {exit.code}"
    return directory
