"""One synthesized app per test session (per xdist worker): the prod example environment
(schedules, S3 trigger, notifications) with a pinned account and region, because
cdk-nag finding ids embed resolved ARNs."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

from aws_cdk import App, Environment  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from app import build_app, cdk_json_context  # noqa: E402
from stacks.pipeline_stack import PipelineStack  # noqa: E402

ACCOUNT, REGION = "123456789012", "eu-west-1"


@dataclass(frozen=True)
class Synthesized:
    app: App
    stack: PipelineStack
    template: Template
    template_json: dict[str, Any]
    template_path: Path


def synthesize_prod(outdir: Path, **changes: Any) -> Synthesized:
    """The prod example environment, with ``changes`` to its config, synthesized."""
    context = cdk_json_context()
    config = context["batchinfer:environments"]["prod"] | changes
    context |= {"env": "prod", "batchinfer:environments": {"prod": config}}
    app, stack = build_app(
        context, outdir=str(outdir), env=Environment(account=ACCOUNT, region=REGION), nag=False
    )
    assembly = app.synth()
    path = Path(assembly.get_stack_artifact(stack.artifact_id).template_full_path)
    return Synthesized(app, stack, Template.from_stack(stack), json.loads(path.read_text()), path)


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize_prod(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def resources(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return synthesized.template_json["Resources"]


def of_type(resources: dict[str, dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in resources.items() if v["Type"] == kind}
