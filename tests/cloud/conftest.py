"""A moto account with a deployed-looking pipeline stack: a CloudFormation stack whose
outputs (the keys of batchinfer.pipeline.stack_outputs) name a status table (the stack's
keys and index) and a state machine."""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from batchinfer.pipeline import stack_outputs
from batchinfer.pipeline import status_table as keys
from batchinfer.pipeline.status_table import StatusTable

REGION = "eu-west-1"
STACK = "batchinfer-test"


@dataclass
class Deployed:
    table: StatusTable
    sfn: Any
    state_machine_arn: str
    cloudformation: Any


def create_status_table(name: str) -> Any:
    names = (keys.PARTITION_KEY, keys.SORT_KEY, keys.STATUS_INDEX_PARTITION, keys.STATUS_INDEX_SORT)
    return boto3.resource("dynamodb", region_name=REGION).create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": keys.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": keys.SORT_KEY, "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in names],
        GlobalSecondaryIndexes=[
            {
                "IndexName": keys.STATUS_INDEX,
                "KeySchema": [
                    {"AttributeName": keys.STATUS_INDEX_PARTITION, "KeyType": "HASH"},
                    {"AttributeName": keys.STATUS_INDEX_SORT, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def create_output_stack(name: str, outputs: dict[str, str]) -> None:
    """A CloudFormation stack that only carries ``outputs``."""
    template = {
        "Resources": {
            "Marker": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Name": f"/{name}/marker", "Type": "String", "Value": name},
            }
        },
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName=name, TemplateBody=json.dumps(template)
    )


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Deployed]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("BATCHINFER_STACK", raising=False)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        table = create_status_table("test-runs")
        sfn = boto3.client("stepfunctions", region_name=REGION)
        arn = sfn.create_state_machine(
            name="test-runs",
            definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}),
            roleArn="arn:aws:iam::123456789012:role/runs",
        )["stateMachineArn"]
        create_output_stack(
            STACK,
            {
                stack_outputs.STATE_MACHINE_ARN: arn,
                stack_outputs.TABLE_NAME: "test-runs",
                stack_outputs.DATA_BUCKET: "test-data",
            },
        )
        yield Deployed(
            StatusTable(table), sfn, arn, boto3.client("cloudformation", region_name=REGION)
        )
