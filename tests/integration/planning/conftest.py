"""Fixtures for plan tests: the bundled example (model and CSV) as ``batchinfer example``
writes it."""

from pathlib import Path

import pytest

from tests.support.example import write_example

EXAMPLE_ROWS = 6000


@pytest.fixture(scope="session")
def example_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_example(tmp_path_factory.mktemp("example"), EXAMPLE_ROWS)
