"""One synthesized app per test session (per xdist worker): the prod example environment
(schedules, S3 trigger, notifications) with a pinned account and region, because
cdk-nag finding ids embed resolved ARNs."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]

from aws_cdk import App, Environment  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from app import build_app, cdk_json_context  # noqa: E402
from batchinfer.pipeline.contract.environment import PipelineEnvironment  # noqa: E402
from stacks.pipeline_stack import PipelineStack  # noqa: E402
from tests.support.offline.synthesized import synthesize  # noqa: E402

ACCOUNT, REGION = "123456789012", "eu-west-1"
# The environments of cdk.json, each synthesized as it is by ``cdk_json_templates``.
ENVIRONMENTS = sorted(cdk_json_context()["batchinfer:environments"])


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
def cdk_json_templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The template of each environment of cdk.json, unchanged (dev names no account or
    region: its ARNs hold pseudo parameters)."""
    return {
        name: synthesize(name, tmp_path_factory.mktemp(f"cdk.out-{name}"), {})
        for name in ENVIRONMENTS
    }


@pytest.fixture(scope="session")
def resources(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return synthesized.template_json["Resources"]


def of_type(resources: dict[str, dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in resources.items() if v["Type"] == kind}


def pipeline_functions(template: dict[str, Any]) -> list[dict[str, Any]]:
    """The properties of the pipeline's own Lambdas (not CDK's custom resource handlers)."""
    return [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
        and "BATCHINFER_TABLE_NAME" in r["Properties"].get("Environment", {}).get("Variables", {})
    ]


def pipeline_environment(template: dict[str, Any], **resolved: str) -> PipelineEnvironment:
    """What the pipeline's Lambdas know of their stack: the template's literal variables,
    and ``resolved`` values (by field) for those CloudFormation fills in at deploy."""
    variables = pipeline_functions(template)[0]["Environment"]["Variables"]
    literal = {k: v for k, v in variables.items() if isinstance(v, str)}
    filled = {PipelineEnvironment.variable(name): value for name, value in resolved.items()}
    return PipelineEnvironment.from_variables(literal | filled)
