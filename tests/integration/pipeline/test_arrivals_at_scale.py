"""The S3 trigger's Lambda handler at the batch sizes its event source mapping hands it (up
to 10,000 messages): the calls it makes are counted, not timed, and its time is the
harness's Lambda context. A batch is delivered again whole, regrouped, or in part when the
invocation runs out of time, and no object is in two runs (R4: a run names its objects)."""

import json
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any
from unittest import mock
from urllib.parse import quote_plus

import boto3
import pytest
from botocore.client import BaseClient
from moto import mock_aws

from tests.support.aws import REGION, create_status_table
from tests.support.lambdas import load_handler
from tests.support.offline.lambdas import LambdaContext, OutOfTime

BUCKET = "data"
PREFIX = "input/arrivals/"
TABLE = "status"
TIMEOUT_SECONDS = 120  # the function's (stacks/triggers.py)


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        create_status_table(TABLE, REGION)
        states = boto3.client("stepfunctions", region_name=REGION)
        arn = states.create_state_machine(
            name="runs",
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn="arn:aws:iam::123456789012:role/runs",
        )["stateMachineArn"]
        variables = {
            "BATCHINFER_TRIGGER_BUCKET": BUCKET,
            "BATCHINFER_TRIGGER_PREFIX": PREFIX,
            "BATCHINFER_TRIGGER_REQUEST": json.dumps({"merge": True}),
            "BATCHINFER_STATE_MACHINE_ARN": arn,
            "BATCHINFER_TRIGGER_TABLE": TABLE,
        }
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        yield {"s3": s3, "states": states, "arn": arn}


@pytest.fixture
def calls() -> Iterator[Counter[str]]:
    """Every AWS call made while open, by ``service.Operation``."""
    counted: Counter[str] = Counter()
    lock = threading.Lock()
    original = BaseClient._make_api_call

    def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        with lock:
            counted[f"{client.meta.service_model.service_name}.{operation}"] += 1
        return original(client, operation, params)

    with mock.patch.object(BaseClient, "_make_api_call", call):
        yield counted


def arrive(s3: Any, keys: list[str]) -> list[dict[str, Any]]:
    """Put each of ``keys``; the SQS records of their "Object Created" events (keys
    URL-encoded as S3 sends them)."""
    records = []
    for number, key in enumerate(keys):
        etag = s3.put_object(Bucket=BUCKET, Key=key, Body=b"1,2\n")["ETag"]
        event = {
            "version": "0",
            "id": f"event-{number}",
            "detail-type": "Object Created",
            "source": "aws.s3",
            "detail": {
                "bucket": {"name": BUCKET},
                "object": {
                    "key": quote_plus(key, safe="/"),
                    "size": 4,
                    "etag": etag.strip('"'),
                    "sequencer": f"{number:018X}",
                },
            },
        }
        records.append({"messageId": f"m-{number}", "body": json.dumps(event)})
    return records


def deliver(records: list[dict[str, Any]], short: OutOfTime | None = None) -> list[str]:
    """The handler's batch item failures for a batch of ``records``."""
    handler = load_handler("arrivals").handler
    answer = handler({"Records": records}, LambdaContext(TIMEOUT_SECONDS, short))
    return [item["itemIdentifier"] for item in answer["batchItemFailures"]]


def runs(aws: dict[str, Any]) -> dict[str, list[str]]:
    """The keys each execution of the state machine names, by execution name."""
    paginator = aws["states"].get_paginator("list_executions")
    found = {}
    for page in paginator.paginate(stateMachineArn=aws["arn"]):
        for execution in page["executions"]:
            described = aws["states"].describe_execution(executionArn=execution["executionArn"])
            request = json.loads(described["input"])
            folder = request["input"].removeprefix(f"s3://{BUCKET}/")
            found[execution["name"]] = [folder + name for name in request["names"]]
    return found


def each_once(started: dict[str, list[str]]) -> Counter[str]:
    return Counter(key for keys in started.values() for key in keys)


def spaced_keys(folders: int, per_folder: int) -> list[str]:
    return [
        f"{PREFIX}day {f:02}/part {n:03}.csv" for f in range(folders) for n in range(per_folder)
    ]


def test_3000_arrivals_are_30_runs_with_a_few_lookups_and_one_start_each(aws, calls):
    keys = spaced_keys(30, 100)
    records = arrive(aws["s3"], keys)
    calls.clear()

    assert deliver(records) == []

    assert calls["s3.ListObjectsV2"] <= 2, "a batch's key encoding is settled once, not per key"
    started = runs(aws)
    assert len(started) == 30 and calls["stepfunctions.StartExecution"] == 30
    assert each_once(started) == Counter(keys)


def test_a_batch_delivered_again_regrouped_starts_nothing_twice(aws):
    """The answer to a batch is lost (the invocation timed out after it started its runs):
    SQS delivers the messages again, grouped otherwise, beside new arrivals."""
    keys = spaced_keys(3, 10)
    records = arrive(aws["s3"], keys)
    assert deliver(records) == []
    first = runs(aws)
    assert len(first) == 3

    late = arrive(aws["s3"], [f"{PREFIX}day 01/late.csv"])
    for regrouped in (records[5:25] + late, records[20:] + records[:5] + late):
        assert deliver(regrouped) == []

    started = runs(aws)
    assert set(first) <= set(started) and len(started) == 4
    assert each_once(started) == Counter([*keys, f"{PREFIX}day 01/late.csv"])


def test_a_batch_out_of_time_reports_the_runs_not_started_and_their_redelivery_starts_them(
    aws,
):
    """The context reports time for 10 runs, then 1 s: the other 20 runs' messages are
    answered as failures, and SQS's redelivery of them (regrouped) starts just those."""
    keys = spaced_keys(30, 10)
    records = arrive(aws["s3"], keys)

    failed = deliver(records, OutOfTime("arrivals", asks=10))

    started = runs(aws)
    assert len(started) == 10
    assert len(failed) == 200
    later = [r for r in records if r["messageId"] in failed]
    assert deliver(later[:150]) == [] and deliver(later[100:]) == []
    started = runs(aws)
    assert len(started) == 30
    assert each_once(started) == Counter(keys)
