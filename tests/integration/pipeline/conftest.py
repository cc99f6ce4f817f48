"""A moto account with what the pipeline Lambdas use: the data bucket, the status table
(keys and index as the stack makes them), the topic and event bus, each drained into an SQS
queue so tests can read what was announced."""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.storage.clients import aws_session
from batchinfer.pipeline.storage.status_table import StatusTable
from tests.support.aws import create_status_table
from tests.support.run_state import BUCKET

REGION = "eu-west-1"


@dataclass
class Account:
    s3: Any
    events: Any
    sns: Any
    sqs: Any
    sagemaker: Any
    table: StatusTable
    env: PipelineEnvironment
    topic_queue: str
    bus_queue: str

    def put(self, key: str, data: bytes) -> str:
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=data)
        return f"s3://{BUCKET}/{key}"

    def get(self, uri: str) -> bytes:
        bucket, key = uri.removeprefix("s3://").split("/", 1)
        return self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()

    def json_lines(self, uri: str) -> list[Any]:
        """The values of a JSON Lines object, such as Plan's split tasks."""
        return [json.loads(line) for line in self.get(uri).splitlines()]

    def keys(self, prefix: str) -> list[str]:
        listed = self.s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
        return sorted(item["Key"] for item in listed.get("Contents", []))

    def failure_clients(self) -> dict[str, Any]:
        """What record_failure and record_ended_execution are given besides the event."""
        return {
            "env": self.env,
            "table": self.table,
            "events": self.events,
            "sns": self.sns,
            "sagemaker": self.sagemaker,
        }

    def announced(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(SNS notifications, run-finished events) delivered so far."""
        return _drain(self.sqs, self.topic_queue), _drain(self.sqs, self.bus_queue)


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        s3 = aws_session().client("s3", region_name=REGION)  # as the Lambdas make theirs
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        table = create_status_table("runs", REGION)
        sns = boto3.client("sns", region_name=REGION)
        events = boto3.client("events", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        topic = sns.create_topic(Name="runs")["TopicArn"]
        topic_queue = sqs.create_queue(QueueName="topic")["QueueUrl"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=_queue_arn(sqs, topic_queue))
        events.create_event_bus(Name="runs-bus")
        bus_queue = sqs.create_queue(QueueName="bus")["QueueUrl"]
        events.put_rule(
            Name="all", EventBusName="runs-bus", EventPattern=json.dumps({"source": ["batchinfer"]})
        )
        events.put_targets(
            Rule="all",
            EventBusName="runs-bus",
            Targets=[{"Id": "q", "Arn": _queue_arn(sqs, bus_queue)}],
        )
        env = PipelineEnvironment(
            table_name="runs",
            data_bucket=BUCKET,
            job_prefix="bi-test",
            transform_defaults={
                "content_type": "text/csv",
                "accept": "text/csv",
                "split_type": "Line",
                "assemble_with": "Line",
                "instance_type": "ml.m5.large",
            },
            shard_size="64MiB",
            max_rounds=2,
            model_name="row-sum",
            model_data_url="s3://models/row-sum/model.tar.gz",
            image_uri="123456789012.dkr.ecr.eu-west-1.amazonaws.com/batchinfer:latest",
            sagemaker_role_arn="arn:aws:iam::123456789012:role/jobs",
            kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/k",
            topic_arn=topic,
            event_bus_name="runs-bus",
        )
        yield Account(
            s3=s3,
            events=events,
            sns=sns,
            sqs=sqs,
            sagemaker=boto3.client("sagemaker", region_name=REGION),
            table=StatusTable(table),
            env=env,
            topic_queue=topic_queue,
            bus_queue=bus_queue,
        )


def _queue_arn(sqs: Any, url: str) -> str:
    return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
