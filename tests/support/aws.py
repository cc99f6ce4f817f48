"""moto resources shaped like the deployed stack's."""

import json
from typing import Any

import boto3

from batchinfer.pipeline.storage import status_table as keys

# The account and region the offline stack and the permission audit stand in for.
ACCOUNT = "123456789012"
REGION = "eu-west-1"


def create_status_table(name: str, region: str) -> Any:
    """The status table with the stack's key schema and by-status index."""
    names = (keys.PARTITION_KEY, keys.SORT_KEY, keys.STATUS_INDEX_PARTITION, keys.STATUS_INDEX_SORT)
    return boto3.resource("dynamodb", region_name=region).create_table(
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


def create_output_stack(name: str, outputs: dict[str, str], region: str) -> None:
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
    boto3.client("cloudformation", region_name=region).create_stack(
        StackName=name, TemplateBody=json.dumps(template)
    )
