"""The suite's quicker moto S3 (tests/support/quick_s3.py) answers what moto's own code answers:
every page of a listing, and every timestamp it serialises."""

import itertools
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import boto3
import moto.core.serialize
import pytest
from botocore.utils import parse_to_aware_datetime
from hypothesis import example, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.serialize import TimestampSerializer
from moto.s3.models import S3Backend, s3_backends

from tests.support.quick_s3 import MOTOS_LIST_OBJECTS_V2, aware_datetime

REGION = "eu-west-1"
_BUCKETS = itertools.count()

# A few names often (stored again: newer versions), any other now and then.
names = st.sampled_from(["a", "a/b", "a/c", "b-", "é"]) | st.text(
    alphabet="ab/-é.0", min_size=1, max_size=6
)


@pytest.fixture(scope="module")
def s3() -> Any:
    with mock_aws():
        yield boto3.client("s3", region_name=REGION)


def test_the_suite_runs_on_the_quick_paths():
    assert S3Backend.list_objects_v2 is not MOTOS_LIST_OBJECTS_V2
    assert moto.core.serialize.parse_to_aware_datetime is aware_datetime


def pages(backend: S3Backend, list_objects: Any, bucket: Any, **listing: Any) -> list[Any]:
    """Each page of a listing as ``list_objects`` answers it: its keys (name and version)
    and whether it is truncated, followed to the last page (a listing of more pages than keys
    never ends)."""
    answered = []
    token = None
    for _ in range(len(bucket.keys) + 2):
        keys, truncated, token = list_objects(backend, bucket, continuation_token=token, **listing)
        answered.append(([(key.name, key.version_id) for key in keys], truncated))
        if not truncated:
            return answered
    raise AssertionError(f"more pages than keys: {answered[:3]}...")


@settings(max_examples=60)
@example(["a", "a", "a/b"], [], None, None, 1, "Enabled").via("a newer version is listed")
@example(["a", "a/b", "a"], ["a/b"], "a", "a", 2, "Suspended").via("deleted after a start")
@given(
    stored=st.lists(names, max_size=25),
    deleted=st.lists(names, max_size=6),
    prefix=st.sampled_from([None, "", "a", "a/", "b-", "é"]),
    start_after=st.one_of(st.none(), names),
    max_keys=st.integers(0, 7),
    versioning=st.sampled_from([None, "Enabled", "Suspended"]),
)
def test_every_page_of_a_listing_is_motos_own(
    s3, stored, deleted, prefix, start_after, max_keys, versioning
):
    bucket_name = f"quick-listing-{next(_BUCKETS)}"
    s3.create_bucket(Bucket=bucket_name, CreateBucketConfiguration={"LocationConstraint": REGION})
    if versioning:
        s3.put_bucket_versioning(Bucket=bucket_name, VersioningConfiguration={"Status": versioning})
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for name in stored:  # a name stored again is a newer version of its object
        backend.put_object(bucket_name, name, b"x")
    for name in deleted:  # a delete marker (versioned), or the object gone
        backend.delete_object(bucket_name, name)
    bucket = backend.get_bucket(bucket_name)
    listing = {"prefix": prefix, "delimiter": None, "start_after": start_after}
    if max_keys == 0:
        quick = S3Backend.list_objects_v2(
            backend, bucket, continuation_token=None, max_keys=0, **listing
        )
        assert quick == MOTOS_LIST_OBJECTS_V2(
            backend, bucket, continuation_token=None, max_keys=0, **listing
        )
        return
    quick = pages(backend, S3Backend.list_objects_v2, bucket, max_keys=max_keys, **listing)
    assert quick == pages(backend, MOTOS_LIST_OBJECTS_V2, bucket, max_keys=max_keys, **listing)
    visible = set(stored) - set(deleted)
    expected = sorted(n for n in visible if n.startswith(prefix or "") and n > (start_after or ""))
    assert [name for page, _ in quick for name, _ in page] == expected


def test_a_listing_with_a_delimiter_pages_through_the_client_as_moto_lists_it(s3):
    s3.create_bucket(
        Bucket="quick-folders", CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    for key in ["a/1", "a/2", "b", "c/d/e", "c/f"]:
        s3.put_object(Bucket="quick-folders", Key=key, Body=b"")
    paginator = s3.get_paginator("list_objects_v2")
    listed = paginator.paginate(
        Bucket="quick-folders", Delimiter="/", PaginationConfig={"PageSize": 2}
    )
    seen = [
        (
            [item["Key"] for item in page.get("Contents", [])],
            [p["Prefix"] for p in page.get("CommonPrefixes", [])],
        )
        for page in listed
    ]
    assert [key for keys, _ in seen for key in keys] == ["b"]
    assert [prefix for _, folders in seen for prefix in folders] == ["a/", "c/"]


def test_a_full_listing_through_the_client_answers_every_key_once_in_order(s3):
    s3.create_bucket(Bucket="quick-many", CreateBucketConfiguration={"LocationConstraint": REGION})
    keys = [f"in/{number:04d}.csv" for number in range(2_500)]
    for key in reversed(keys):
        s3_backends[DEFAULT_ACCOUNT_ID]["aws"].put_object("quick-many", key, b"1")
    paginator = s3.get_paginator("list_objects_v2")
    listed = [
        item
        for page in paginator.paginate(Bucket="quick-many", Prefix="in/")
        for item in page["Contents"]
    ]
    assert [item["Key"] for item in listed] == keys
    assert {item["Size"] for item in listed} == {1}
    assert all(item["LastModified"].tzinfo is not None for item in listed)


offsets = st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
moments = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.none() | offsets
)


@given(moment=moments, form=st.sampled_from(["auto", "seconds", "milliseconds", "Z"]))
def test_a_timestamp_reads_as_botocore_reads_it_and_serialises_alike(moment, form):
    if form == "Z":
        text = moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
    else:
        text = moment.isoformat(timespec=form)
    assert aware_datetime(text) == parse_to_aware_datetime(text)
    for format_name in ["iso8601", "iso8601_zeroed", "rfc822", "unixtimestamp"]:
        serializer = TimestampSerializer(format_name)
        converter = getattr(serializer, f"_timestamp_{format_name}")
        assert converter(aware_datetime(text)) == converter(parse_to_aware_datetime(text)), text


@pytest.mark.parametrize(
    "value",
    ["1700000000", 1700000000, "Tue, 01 Jan 2030 10:00:00 GMT", datetime(2030, 1, 1, tzinfo=UTC)],
)
def test_a_value_not_in_moto_s_iso_form_is_read_by_botocore(value):
    assert aware_datetime(value) == parse_to_aware_datetime(value)
