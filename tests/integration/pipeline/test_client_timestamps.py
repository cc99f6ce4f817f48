"""The pipeline's AWS clients read the timestamps of AWS answers without dateutil, as the same
instants botocore's own parser gives: ISO 8601 in bodies, RFC 1123 in headers, epoch seconds
in JSON, anything else by botocore's parser."""

import datetime

import pytest
from botocore.utils import parse_timestamp

from batchinfer.pipeline.storage.clients import read_timestamp

from .conftest import BUCKET


@pytest.mark.parametrize(
    "value",
    [
        "2025-01-01T12:34:56.000Z",  # ListObjectsV2's LastModified
        "2025-01-01T12:34:56Z",
        "2025-01-01T12:34:56.123456+02:00",
        "2025-01-01T12:34:56",
        "Wed, 01 Jan 2025 12:34:56 GMT",  # a Last-Modified header
        1_700_000_000,  # JSON protocols: epoch seconds
        1_700_000_000.25,
        "1700000000",
        "2025-01-01",
        "2025-01-01 12:34:56Z",
        "Thu, 01 Jan 70 00:00:00 GMT",  # a two-digit year: botocore's reading, not email's
    ],
)
def test_a_timestamp_is_read_as_the_instant_botocore_reads(value):
    ours, botocores = read_timestamp(value), parse_timestamp(value)
    assert ours == botocores
    assert (ours.tzinfo is None) == (botocores.tzinfo is None)
    assert ours.utcoffset() == botocores.utcoffset()


def test_a_form_neither_parser_reads_is_refused_as_botocore_refuses_it():
    with pytest.raises(ValueError):
        parse_timestamp("not a time")
    with pytest.raises(ValueError):
        read_timestamp("not a time")


def test_listing_and_reading_objects_give_the_times_a_plain_client_gives(account):
    import boto3

    plain = boto3.client("s3", region_name=account.s3.meta.region_name)
    for key in ("in/a.csv", "in/b.csv"):
        account.s3.put_object(Bucket=BUCKET, Key=key, Body=b"1,2\n")
    ours = account.s3.list_objects_v2(Bucket=BUCKET, Prefix="in/")["Contents"]
    theirs = plain.list_objects_v2(Bucket=BUCKET, Prefix="in/")["Contents"]
    assert [o["LastModified"] for o in ours] == [o["LastModified"] for o in theirs]
    assert all(o["LastModified"].utcoffset().total_seconds() == 0 for o in ours)
    got = account.s3.get_object(Bucket=BUCKET, Key="in/a.csv")["LastModified"]
    assert got == plain.get_object(Bucket=BUCKET, Key="in/a.csv")["LastModified"]


def test_the_lambdas_read_them_so(account):
    """Their parser is told by its answer: the standard library's UTC, where botocore's own
    gives dateutil's."""
    from batchinfer.pipeline.storage.clients import s3_client

    account.s3.put_object(Bucket=BUCKET, Key="in/a.csv", Body=b"1,2\n")
    s3_client.cache_clear()
    try:
        listed = s3_client().list_objects_v2(Bucket=BUCKET, Prefix="in/")["Contents"]
        assert listed[0]["LastModified"].tzinfo is datetime.UTC
    finally:
        s3_client.cache_clear()
