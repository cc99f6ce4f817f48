"""What the stack's key encrypts and who may use it, on the template of each environment of
cdk.json: every log group under the key, run logs with execution data only where an
environment asks for it, no key grant that can never apply, no service principal that may
use the key for another account's resources."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app import cdk_json_context
from stacks.config import PipelineConfig, load_config
from stacks.nag import flatten

from .conftest import ENVIRONMENTS, REPO_ROOT, of_type

# The condition keys a service's request carries about the resource it acts for.
SOURCE_KEYS = {
    "aws:SourceAccount",
    "aws:SourceArn",
    "kms:EncryptionContext:aws:logs:arn",
    "kms:EncryptionContext:aws:sqs:arn",
}
# The only KMS actions whose requests carry kms:GrantIsForAWSResource.
GRANT_ACTIONS = {"kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant"}


@dataclass(frozen=True)
class Environment:
    config: PipelineConfig
    resources: dict[str, dict[str, Any]]

    @property
    def key_id(self) -> str:
        (key_id,) = of_type(self.resources, "AWS::KMS::Key")
        return key_id

    @property
    def key_statements(self) -> list[dict[str, Any]]:
        return self.resources[self.key_id]["Properties"]["KeyPolicy"]["Statement"]

    def arn(self, service: str, resource: str) -> str:
        """An ARN of this environment as the template writes it (pseudo parameters where
        the environment names no account and region)."""
        config = self.config
        region = config.region or "<AWS::Region>"
        account = config.account or "<AWS::AccountId>"
        partition = "aws" if config.region else "<AWS::Partition>"
        return f"arn:{partition}:{service}:{region}:{account}:{resource}"


@pytest.fixture(params=ENVIRONMENTS)
def environment(request: pytest.FixtureRequest, cdk_json_templates: dict[str, dict[str, Any]]):
    name = request.param
    config = load_config(cdk_json_context(), name, REPO_ROOT)
    return Environment(config, cdk_json_templates[name]["Resources"])


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else action


def _service(statement: dict[str, Any]) -> str | None:
    principal = statement.get("Principal")
    return (
        flatten(principal["Service"])
        if isinstance(principal, dict) and "Service" in principal
        else None
    )


def test_every_log_group_is_encrypted_with_the_stack_key_and_kept_as_configured(environment):
    groups = of_type(environment.resources, "AWS::Logs::LogGroup")
    assert groups
    for logical_id, group in groups.items():
        properties = group["Properties"]
        assert properties.get("KmsKeyId") == {"Fn::GetAtt": [environment.key_id, "Arn"]}, (
            f"{logical_id} is not encrypted with the stack's key"
        )
        assert properties["RetentionInDays"] == environment.config.log_retention_days


def test_every_lambda_writes_to_a_log_group_of_the_stack(environment):
    groups = of_type(environment.resources, "AWS::Logs::LogGroup")
    for logical_id, function in of_type(environment.resources, "AWS::Lambda::Function").items():
        logging = function["Properties"].get("LoggingConfig", {})
        assert logging.get("LogGroup", {}).get("Ref") in groups, (
            f"{logical_id} logs to a log group the stack does not create"
        )


def test_cloudwatch_logs_may_use_the_key_for_this_accounts_log_groups_only(environment):
    service = f"logs.{environment.config.region or '<AWS::Region>'}.amazonaws.com"
    (statement,) = [s for s in environment.key_statements if _service(s) == service]
    # Not kms:Describe*: its requests carry no encryption context, so could never match.
    assert set(_actions(statement)) == {
        "kms:Encrypt*",
        "kms:Decrypt*",
        "kms:ReEncrypt*",
        "kms:GenerateDataKey*",
    }
    (condition,) = statement["Condition"]["ArnLike"].values()
    assert flatten(condition) == environment.arn("logs", "log-group:*")


def test_run_logs_hold_execution_data_only_where_the_environment_asks(environment):
    (machine,) = of_type(environment.resources, "AWS::StepFunctions::StateMachine").values()
    logging = machine["Properties"]["LoggingConfiguration"]
    assert logging["IncludeExecutionData"] is environment.config.log_execution_data
    if environment.config.name == "prod":
        assert logging["IncludeExecutionData"] is False, "prod's run logs hold no requests"


def test_no_key_grant_is_conditioned_on_what_its_requests_never_carry(environment):
    policies = of_type(environment.resources, "AWS::IAM::Policy")
    for logical_id, policy in policies.items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "kms:GrantIsForAWSResource" in str(statement.get("Condition")):
                assert set(_actions(statement)) <= GRANT_ACTIONS, (
                    f"{logical_id}[{statement.get('Sid')}]: {_actions(statement)} can never "
                    "match kms:GrantIsForAWSResource"
                )
    (machine_policy,) = [
        p for k, p in policies.items() if k.startswith("WorkflowStateMachineRoleDefaultPolicy")
    ]
    key_arn = {"Fn::GetAtt": [environment.key_id, "Arn"]}
    assert any(
        "kms:DescribeKey" in _actions(s) and s["Resource"] == key_arn and "Condition" not in s
        for s in machine_policy["Properties"]["PolicyDocument"]["Statement"]
    ), "SageMaker describes a job's volume and output key with the caller's credentials"


def test_every_service_may_use_the_key_only_for_this_accounts_resources(environment):
    services = [s for s in environment.key_statements if _service(s)]
    assert services
    for statement in services:
        conditions = {
            key: flatten(value)
            for operator in statement.get("Condition", {}).values()
            for key, value in operator.items()
        }
        assert set(conditions) & SOURCE_KEYS, f"{_service(statement)} may act for any account"
        account = environment.config.account or "<AWS::AccountId>"
        assert all(account in conditions[k] for k in set(conditions) & SOURCE_KEYS)


def test_alarms_of_this_account_only_may_use_the_key(environment):
    (statement,) = [
        s for s in environment.key_statements if _service(s) == "cloudwatch.amazonaws.com"
    ]
    assert flatten(statement["Condition"]["StringEquals"]["aws:SourceAccount"]) == (
        environment.config.account or "<AWS::AccountId>"
    )
    assert flatten(statement["Condition"]["ArnLike"]["aws:SourceArn"]) == environment.arn(
        "cloudwatch", "alarm:*"
    )


def test_execution_data_is_left_out_of_run_logs_unless_configured():
    context = cdk_json_context()
    raw = dict(context["batchinfer:environments"]["dev"])
    raw.pop("log_execution_data", None)
    environments = {"batchinfer:environments": {"dev": raw}, "env": "dev"}
    assert load_config(environments, "dev", Path(REPO_ROOT)).log_execution_data is False
