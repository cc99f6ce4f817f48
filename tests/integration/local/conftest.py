"""Fixtures for local-engine tests: the spec's model M ("row-sum") served for real, and the
customers' Pipeline fitted on a DataFrame."""

from pathlib import Path

import pytest

from tests.support.models import write_row_sum_model


@pytest.fixture(scope="session")
def row_sum_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_row_sum_model(tmp_path_factory.mktemp("row-sum-model"))


# The customers' table and the Pipeline fitted on it.
from tests.support.customers import frame, pipeline_model  # noqa: E402, F401

# An S3 endpoint (moto's server) for runs over s3://.
from tests.support.s3_server import s3, s3_endpoint, s3_env  # noqa: E402, F401
