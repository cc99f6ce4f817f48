"""Fixtures for local-engine tests: the spec's model M ("row-sum") served for real."""

from pathlib import Path

import pytest

from tests.support.models import write_row_sum_model


@pytest.fixture(scope="session")
def row_sum_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_row_sum_model(tmp_path_factory.mktemp("row-sum-model"))
