"""Fixtures for local-engine tests: the spec's model M ("row-sum") served for real."""

from pathlib import Path

import pytest

from tests.support.models import write_row_sum_model


@pytest.fixture(scope="session")
def row_sum_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_row_sum_model(tmp_path_factory.mktemp("row-sum-model"))


# An S3 endpoint (moto's server) for runs over s3://.
from tests.support.s3_server import s3, s3_endpoint, s3_env  # noqa: E402, F401
