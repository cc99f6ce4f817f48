"""parliament, an IAM policy linter, on every policy of each environment's template (the
roles' policies, the CLI's managed policy, the key, bucket, topic and queue policies): no
finding but those acknowledged below, each with the reason it does not apply."""

import fnmatch
import json
from typing import Any

import pytest
from parliament import analyze_policy_string

from tests.support.aws import ACCOUNT, REGION
from tests.support.offline.stack import resource_arn
from tests.support.offline.template import render

from .conftest import ENVIRONMENTS

STACK = "batchinfer-lint"
POLICY_PROPERTIES = ("PolicyDocument", "KeyPolicy")

# ``<logical id> <issue> <detail>`` (fnmatch patterns) and why the finding does not apply.
ACKNOWLEDGED: dict[str, str] = {
    "StorageKey* RESOURCE_STAR *": (
        "In a key policy, Resource * is the key the policy is attached to (AWS KMS Developer "
        "Guide, 'Key policies in AWS KMS'); nothing else can be named there."
    ),
    "StorageKey* MISMATCHED_TYPE *ArnLike*": (
        "kms:EncryptionContext:aws:logs:arn holds a log group's ARN: the CloudWatch Logs User "
        "Guide's key policy statement compares it with ArnLike/ArnEquals, as AWS's managed "
        "policy CloudWatchLogsAPIKeyAccess does."
    ),
    "WorkflowStateMachineDistributedMapPolicy* RESOURCE_MISMATCH *states:DescribeExecution*": (
        "CDK's grant on the Distributed Map's child executions, Standard ones "
        "(execution:<machine>:*); parliament asks for every resource type the catalogue lists "
        "for DescribeExecution, Express executions' too, which this state machine never has."
    ),
}


def _names(resources: dict[str, dict[str, Any]]) -> tuple[dict[str, str], dict[Any, str]]:
    """What ``Ref`` and ``Fn::GetAtt`` give for each resource, as AWS forms them."""
    refs = {
        "AWS::Partition": "aws",
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT,
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::StackName": STACK,
    }
    attributes = {}

    def arn(service: str) -> str:
        return f"arn:aws:{service}:{REGION}:{ACCOUNT}:"

    for logical_id, resource in resources.items():
        physical = f"{STACK}-{logical_id.lower()}"
        refs[logical_id] = {
            "AWS::StepFunctions::StateMachine": f"{arn('states')}stateMachine:{physical}",
            "AWS::SNS::Topic": f"{arn('sns')}{physical}",
        }.get(resource["Type"], physical)
        attributes[(logical_id, "Arn")] = resource_arn(resource, logical_id, physical)
    return refs, attributes


def findings(template: dict[str, Any]) -> list[str]:
    """``<logical id> <issue> <detail>`` for each of parliament's findings on the template's
    policies, references resolved to names and ARNs."""
    resources = template["Resources"]
    refs, attributes = _names(resources)
    found = []
    for logical_id, resource in resources.items():
        for name in POLICY_PROPERTIES:
            document = resource.get("Properties", {}).get(name)
            if document is None:
                continue
            policy = analyze_policy_string(json.dumps(render(document, refs, attributes)))
            found += [
                f"{logical_id} {f.issue} {json.dumps(f.detail, sort_keys=True)}"
                for f in policy.findings
            ]
    return found


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_parliament_finds_nothing_unacknowledged(name, cdk_json_templates):
    found = findings(cdk_json_templates[name])
    assert found, "the key policy's Resource * is always found"
    problems = [
        line for line in found if not any(fnmatch.fnmatchcase(line, p) for p in ACKNOWLEDGED)
    ]
    assert problems == []


def test_every_acknowledged_finding_is_found(cdk_json_templates):
    found = [line for template in cdk_json_templates.values() for line in findings(template)]
    stale = [p for p in ACKNOWLEDGED if not any(fnmatch.fnmatchcase(line, p) for line in found)]
    assert stale == []


def test_parliament_finds_a_grant_under_a_condition_its_requests_never_carry():
    """The linter catches what it is here for: kms:DescribeKey under kms:GrantIsForAWSResource."""
    key = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{STACK}-key"
    statement = {
        "Effect": "Allow",
        "Action": ["kms:CreateGrant", "kms:DescribeKey"],
        "Resource": key,
        "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
    }
    policy = analyze_policy_string(json.dumps({"Version": "2012-10-17", "Statement": [statement]}))
    assert [f.issue for f in policy.findings] == ["UNKNOWN_CONDITION_FOR_ACTION"]
