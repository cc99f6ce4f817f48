"""The e2e fixtures: one template synthesized per test session (per xdist worker) from the
dev environment of cdk.json, with a 1-second retry interval so that moto, which waits out
Retry intervals for real, runs the retry path quickly; the spec's model M as a model.tar.gz."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.models import ROW_SUM, write_row_sum_model
from tests.support.offline import REGION, OfflineStack, model_archive, offline_stack

REPO_ROOT = Path(__file__).resolve().parents[2]

ENV = "dev"
RETRY = {"interval_seconds": 1, "backoff_rate": 1.0, "max_attempts": 3, "max_delay_seconds": 1}


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from app import build_app, cdk_json_context

    context = cdk_json_context()
    environments = context["batchinfer:environments"]
    config = environments[ENV] | {"retry": RETRY, "max_rounds": 3}
    context = context | {"env": ENV, "batchinfer:environments": {ENV: config}}
    outdir = tmp_path_factory.mktemp("cdk.out")
    app, stack = build_app(context, outdir=str(outdir), nag=False)
    assembly = app.synth()
    return json.loads(
        Path(assembly.get_stack_artifact(stack.artifact_id).template_full_path).read_text()
    )


@pytest.fixture(scope="session")
def row_sum_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return model_archive(ROW_SUM, tmp_path_factory.mktemp("row-sum"))


@pytest.fixture
def stack(
    template: dict[str, Any], row_sum_archive: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[OfflineStack]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with offline_stack(template, row_sum_archive) as offline:
        yield offline


@pytest.fixture(scope="session")
def row_sum_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_row_sum_model(tmp_path_factory.mktemp("row-sum-model"))
