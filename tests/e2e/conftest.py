"""The e2e fixtures: templates synthesized once per test session (per xdist worker) from the
dev and prod environments of cdk.json, with a 1-second retry interval, capacity wait and
admission polling interval so that moto, which waits out Retry intervals and Wait states for
real, runs those paths quickly; the spec's model M as a model.tar.gz."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.models import ROW_SUM, write_row_sum_model
from tests.support.offline import REGION, OfflineStack, model_archive, offline_stack, synthesized

REPO_ROOT = Path(__file__).resolve().parents[2]

ENV = "dev"
RETRY = {
    "interval_seconds": 1,
    "backoff_rate": 1.0,
    "max_attempts": 3,
    "max_delay_seconds": 1,
    "capacity_wait_seconds": 1,
}
# A budget of 8 of the dev instance type (beside the environment's own budgets), shared by
# the runs of one stack; waiting runs try again every second.
INSTANCE_TYPE = "ml.m5.large"
BUDGET = 8
ADMISSION = {"poll_seconds": 1, "max_wait_minutes": 10}


def synthesize(env: str, directory: Path, **overrides: Any) -> dict[str, Any]:
    """The template of environment ``env`` of cdk.json, with quick retries and admission
    and the config keys ``overrides`` on top."""
    from app import cdk_json_context

    admission = cdk_json_context()["batchinfer:environments"][env].get("admission", {})
    budget = admission.get("instance_budget", {}) | {INSTANCE_TYPE: BUDGET}
    admission = admission | ADMISSION | {"instance_budget": budget}
    quick = {"retry": RETRY, "max_rounds": 3, "admission": admission}
    return synthesized.synthesize(env, directory, quick | overrides)


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return synthesize(ENV, tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def prod_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shipped prod example: schedules, an S3 trigger, a data source and an output
    destination in existing buckets."""
    return synthesize("prod", tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def row_sum_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return model_archive(ROW_SUM, tmp_path_factory.mktemp("row-sum"))


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")


@pytest.fixture
def stack(template: dict[str, Any], row_sum_archive: Path, aws_env: None) -> Iterator[OfflineStack]:
    with offline_stack(template, row_sum_archive) as offline:
        yield offline


@pytest.fixture
def prod_stack(
    prod_template: dict[str, Any], row_sum_archive: Path, aws_env: None
) -> Iterator[OfflineStack]:
    with offline_stack(prod_template, row_sum_archive) as offline:
        yield offline


@pytest.fixture(scope="session")
def row_sum_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_row_sum_model(tmp_path_factory.mktemp("row-sum-model"))
