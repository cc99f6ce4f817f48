"""checkov, an infrastructure-as-code scanner, on each environment's template: no failed check
but those acknowledged below, each with the reason it does not apply.

checkov runs from its own venv (``.venv-scan``, ``make setup``, requirements-scan.txt), offline
(``--skip-download``: no check metadata fetched from its vendor)."""

import fnmatch
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import ENVIRONMENTS, REPO_ROOT

CHECKOV = REPO_ROOT / ".venv-scan" / "bin" / "checkov"

# ``<check id> <logical id>`` (fnmatch patterns) and why the check does not apply.
ACKNOWLEDGED: dict[str, str] = {
    "CKV_AWS_18 StorageAccessLogs*": (
        "The access-log bucket is where the other buckets' access logs go; logging its own "
        "access into itself would log every log delivery (S3 User Guide, 'Enabling Amazon S3 "
        "server access logging': the target bucket should not log to itself)."
    ),
    "CKV_AWS_116 Functions*": (
        "A dead-letter queue takes a Lambda's failed asynchronous invocations; the pipeline's "
        "steps are invoked synchronously by the state machine, which retries and catches their "
        "errors and records the run's failure."
    ),
    "CKV_AWS_116 TriggersArrivalsFunction*": (
        "The arrivals function is invoked by an SQS event source mapping (synchronously); "
        "messages it cannot take go to the queue's own dead-letter queue after its retries."
    ),
    "CKV_AWS_116 BucketNotificationsHandler*": (
        "CDK's handler for the bucket's event notification configuration, a CloudFormation "
        "custom resource invoked once per deployment; its failure fails the deployment."
    ),
    "CKV_AWS_115 *": (
        "No reserved concurrency: the state machine bounds each step's concurrency (each "
        "Distributed Map's MaxConcurrency, the arrivals mapping's MaximumConcurrency), and "
        "reserving would take that capacity from the account's other functions at all times."
    ),
    "CKV_AWS_117 *": (
        "The functions run in a VPC when the environment names one (`vpc` in cdk.json, "
        "docs/deploy.md); these environments name none, and the functions reach S3, DynamoDB, "
        "SageMaker and Step Functions only through their APIs, under IAM."
    ),
    "CKV_AWS_173 *": (
        "The functions' environments hold resource names and settings, no secrets; Lambda "
        "encrypts them at rest with its service key."
    ),
    "CKV_AWS_27 TriggersArrivals*": (
        "The arrival queues use SQS-managed server-side encryption (SqsManagedSseEnabled); "
        "their messages are EventBridge's Object Created events (bucket, key, size, ETag). The "
        "check accepts only a KMS key."
    ),
}


def failed_checks(template: dict[str, Any], folder: Path) -> list[str]:
    """``<check id> <logical id>`` for each check checkov fails on ``template``."""
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV} is missing: `make setup` installs checkov (requirements-scan.txt)")
    path = folder / "template.json"
    path.write_text(json.dumps(template))
    options = ["--framework", "cloudformation", "--skip-download", "--quiet", "--output", "json"]
    scan = subprocess.run(
        [CHECKOV, "-f", path, *options], capture_output=True, text=True, timeout=600
    )
    assert scan.returncode in (0, 1), scan.stderr  # 1: some check failed
    report = json.loads(scan.stdout)
    return sorted(
        f"{check['check_id']} {check['resource'].split('.', 1)[1]}"
        for check in report["results"]["failed_checks"]
    )


@pytest.fixture(scope="module")
def checkov_findings(cdk_json_templates, tmp_path_factory) -> dict[str, list[str]]:
    return {
        name: failed_checks(template, tmp_path_factory.mktemp(f"checkov-{name}"))
        for name, template in cdk_json_templates.items()
    }


def _acknowledged(line: str) -> bool:
    return any(fnmatch.fnmatchcase(line, pattern) for pattern in ACKNOWLEDGED)


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_checkov_finds_nothing_unacknowledged(name, checkov_findings):
    found = checkov_findings[name]
    assert found, "the access-log bucket's own logging is always found"
    assert [line for line in found if not _acknowledged(line)] == []


def test_every_acknowledged_check_is_found(checkov_findings):
    found = [line for lines in checkov_findings.values() for line in lines]
    stale = [p for p in ACKNOWLEDGED if not any(fnmatch.fnmatchcase(line, p) for line in found)]
    assert stale == []


def test_checkov_finds_a_bucket_without_encryption_or_tls(tmp_path):
    """The scanner catches what it is here for: a bare bucket fails its checks."""
    template = {"Resources": {"Bare": {"Type": "AWS::S3::Bucket", "Properties": {}}}}
    found = failed_checks(template, tmp_path)
    assert "CKV_AWS_18 Bare" in found  # no access logging
    assert "CKV_AWS_21 Bare" in found  # no versioning
