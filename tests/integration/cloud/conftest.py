"""A moto account with a deployed-looking pipeline stack: a CloudFormation stack whose
outputs (the keys of batchinfer.pipeline.contract.stack_outputs) name a status table (the stack's
keys and index) and a state machine."""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from batchinfer.pipeline.contract import stack_outputs
from batchinfer.pipeline.storage.status_table import StatusTable
from tests.support.aws import create_output_stack, create_status_table

REGION = "eu-west-1"
STACK = "batchinfer-test"


@dataclass
class Deployed:
    table: StatusTable
    sfn: Any
    state_machine_arn: str
    cloudformation: Any


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Deployed]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("BATCHINFER_STACK", raising=False)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        table = create_status_table("test-runs", REGION)
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
            REGION,
        )
        yield Deployed(
            StatusTable(table), sfn, arn, boto3.client("cloudformation", region_name=REGION)
        )
