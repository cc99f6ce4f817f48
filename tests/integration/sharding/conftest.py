"""Fixtures for the sharding tests: a moto S3 bucket, request observation, CSV data."""

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.support.s3_requests import RequestLog


class Bucket:
    """A moto bucket with shortcuts to put, get and list objects by key or URI."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name
        client.create_bucket(Bucket=name)

    def put(self, key: str, data: bytes) -> str:
        self.client.put_object(Bucket=self.name, Key=key, Body=data)
        return f"s3://{self.name}/{key}"

    def get(self, uri: str) -> bytes:
        bucket, key = uri.removeprefix("s3://").split("/", 1)
        return self.client.get_object(Bucket=bucket, Key=key)["Body"].read()

    def keys(self, prefix: str = "") -> list[str]:
        listed = self.client.list_objects_v2(Bucket=self.name, Prefix=prefix)
        return sorted(item["Key"] for item in listed.get("Contents", []))

    def open_uploads(self) -> list[str]:
        listed = self.client.list_multipart_uploads(Bucket=self.name)
        return [upload["Key"] for upload in listed.get("Uploads", [])]


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A boto3 S3 client on moto; clients made inside the code under test use moto too."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield boto3.client("s3", region_name="us-east-1")


@pytest.fixture
def bucket(s3: Any) -> Bucket:
    return Bucket(s3, "shards-test")


@pytest.fixture
def s3_log(s3: Any) -> RequestLog:
    return RequestLog(s3)


def _csv_lines(count: int, width: int = 40) -> bytes:
    return b"".join(b"%d,%s\n" % (n, b"x" * (n * 7919 % width)) for n in range(count))


@pytest.fixture
def csv_lines() -> Callable[..., bytes]:
    """``csv_lines(count, width=40)``: CSV records of varying length, each ending in ``\\n``."""
    return _csv_lines
