"""The pipeline's S3 reads over moto: counts of plain and gzip objects (R6, R11), and bad
objects as InputErrors that name the s3:// URI instead of a bare parser error."""

import gzip
import json

import boto3
import pytest
from moto import mock_aws

from batchinfer.errors import InputError
from batchinfer.pipeline.s3io import count_lines, read_json
from batchinfer.uris import parse_s3_uri

REGION = "eu-west-1"
BUCKET = "s3io-test"


@pytest.fixture
def s3(monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        yield client


def put(s3, key: str, data: bytes) -> str:
    s3.put_object(Bucket=BUCKET, Key=key, Body=data)
    return f"s3://{BUCKET}/{key}"


def test_read_json_returns_the_value(s3):
    uri = put(s3, "runs/r/shards.json", json.dumps([{"name": "a"}]).encode())
    assert read_json(s3, parse_s3_uri(uri)) == [{"name": "a"}]


@pytest.mark.parametrize(
    "body", [b'[{"name": "a"', b"\xff\xfe not utf-8"], ids=["cut-short", "not-utf8"]
)
def test_corrupt_json_object_is_an_input_error_naming_its_uri(s3, body):
    uri = put(s3, "runs/r/shards.json", body)
    with pytest.raises(InputError, match=f"{uri}: not valid JSON"):
        read_json(s3, parse_s3_uri(uri))


def test_counts_plain_and_multi_member_gzip_objects_R6_R11(s3):
    assert count_lines(s3, put(s3, "a.csv", b"1,2\n3,4\n5,6")) == 3
    members = gzip.compress(b"1,2\n3,4\n") + gzip.compress(b"5,6\n")
    assert count_lines(s3, put(s3, "a.csv.gz", members), gzip=True) == 3


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"this is not deflate data", "not valid gzip data"),
        (b"plain text, no gzip header\n", "not valid gzip data"),
        (gzip.compress(b"1,2\n" * 1000)[:-12], "truncated"),
    ],
    ids=["bad-deflate", "no-header", "truncated"],
)
def test_corrupt_gzip_object_is_an_input_error_naming_its_uri_R11(s3, data, problem):
    uri = put(s3, "shards/x.csv.gz", data)
    with pytest.raises(InputError, match=f"{uri}: .*{problem}"):
        count_lines(s3, uri, gzip=True)
