"""Fixtures for plan tests: the bundled example (model and CSV) as ``batchinfer example``
writes it, and a model fitted on a pandas DataFrame."""

from pathlib import Path

import pytest

from tests.support.example import write_example
from tests.support.frames import write_frame_model

EXAMPLE_ROWS = 6000


@pytest.fixture(scope="session")
def example_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_example(tmp_path_factory.mktemp("example"), EXAMPLE_ROWS)


@pytest.fixture(scope="session")
def frame_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_frame_model(tmp_path_factory.mktemp("frame") / "model")
