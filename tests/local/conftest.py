"""Fixtures for local-engine tests: the spec's model M ("row-sum") served for real."""

from pathlib import Path

import pytest

from tests.support.models import ROW_SUM


@pytest.fixture(scope="session")
def row_sum_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model_dir = tmp_path_factory.mktemp("row-sum-model")
    (model_dir / "code").mkdir()
    (model_dir / "code" / "inference.py").write_text(ROW_SUM)
    return model_dir
