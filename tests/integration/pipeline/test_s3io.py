"""The pipeline's S3 reads and writes over moto: counts of plain and gzip objects (R6, R11),
JSON Lines and JSON arrays written in bounded memory and read back, and bad objects as
InputErrors that name the s3:// URI instead of a bare parser error."""

import gzip
import json

import boto3
import pytest
from moto import mock_aws

from batchinfer.errors import InputError
from batchinfer.pipeline.storage import s3io
from batchinfer.pipeline.storage.s3io import SpooledJson, count_lines, read_json, read_json_lines
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


@pytest.mark.parametrize("count", [0, 1, 3000])
def test_spooled_values_read_back_as_json_lines_and_as_an_array(s3, monkeypatch, count):
    monkeypatch.setattr(s3io, "SPOOL_MEMORY", 1024)  # 3,000 values go to the file on disk
    values = [{"input": f"s3://b/in/{n}.csv", "n": n} for n in range(count)]
    lines, array = parse_s3_uri(f"s3://{BUCKET}/runs/r/t.jsonl"), parse_s3_uri(f"s3://{BUCKET}/a")
    for form, location in (("lines", lines), ("array", array)):
        with SpooledJson(form) as spool:
            for value in values:
                spool.add(value)
            assert spool.upload(s3, location) == location.uri
            assert spool.count == count
    assert list(read_json_lines(s3, lines)) == values
    assert read_json(s3, array) == values
    head = s3.head_object(Bucket=BUCKET, Key=lines.key)
    assert head["ContentType"] == "application/jsonlines"


def test_a_bad_json_line_is_an_input_error_naming_the_uri_and_line(s3):
    uri = put(s3, "runs/r/inputs.jsonl", b'{"input": "s3://b/a"}\n\n{"input": \n')
    with pytest.raises(InputError, match=rf"{uri}: line 3 is not valid JSON"):
        list(read_json_lines(s3, parse_s3_uri(uri)))
    with pytest.raises(InputError, match=r"s3://s3io-test/runs/none.jsonl: cannot read"):
        list(read_json_lines(s3, parse_s3_uri(f"s3://{BUCKET}/runs/none.jsonl")))


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
