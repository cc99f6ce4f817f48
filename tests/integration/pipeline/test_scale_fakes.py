"""The scale harness's fake S3 and status table answer the pipeline's calls as moto does
(the same bytes, listings, errors and pages), check each request against botocore's model,
and charge each call to the meter the time costs.py gives it."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.exceptions import ClientError, ParamValidationError

from batchinfer.pipeline.storage.status_table import (
    MISSING,
    SHARD_PARTITIONS,
    StatusTable,
    shard_partition,
)
from tests.support.many_objects import put_directly
from tests.support.scale.costs import S3_REQUEST_SECONDS, s3_seconds
from tests.support.scale.fake_s3 import FakeS3
from tests.support.scale.fake_table import FakeTable
from tests.support.scale.meter import Meter

from .conftest import BUCKET


@pytest.fixture
def fake(tmp_path):
    return FakeS3(tmp_path, Meter())


def both(account, fake):
    return [("moto", account.s3), ("fake", fake)]


def test_objects_read_back_whole_and_by_range_as_moto_gives_them(account, fake):
    for _, s3 in both(account, fake):
        s3.put_object(Bucket=BUCKET, Key="a/b.csv", Body=b"1,2\n3,4\n5,6\n")
    for name, s3 in both(account, fake):
        assert s3.get_object(Bucket=BUCKET, Key="a/b.csv")["Body"].read() == b"1,2\n3,4\n5,6\n"
        ranged = s3.get_object(Bucket=BUCKET, Key="a/b.csv", Range="bytes=4-7")["Body"].read()
        assert ranged == b"3,4\n", name
        tail = s3.get_object(Bucket=BUCKET, Key="a/b.csv", Range="bytes=8-")["Body"].read()
        assert tail == b"5,6\n", name
        assert s3.head_object(Bucket=BUCKET, Key="a/b.csv")["ContentLength"] == 12


def test_missing_objects_fail_as_on_s3(account, fake):
    for name, s3 in both(account, fake):
        with pytest.raises(ClientError) as missing:
            s3.get_object(Bucket=BUCKET, Key="nothing")
        assert missing.value.response["Error"]["Code"] == "NoSuchKey", name


def test_a_copy_from_a_source_that_changed_fails_412(fake):
    """CopyObject with ``x-amz-copy-source-if-match`` answers 412 PreconditionFailed when the
    source's ETag differs (Amazon S3 API Reference, CopyObject); moto 5.2.5 copies anyway."""
    fake.put_object(Bucket=BUCKET, Key="src", Body=b"x\n")
    with pytest.raises(ClientError) as changed:
        fake.copy_object(
            CopySource={"Bucket": BUCKET, "Key": "src"},
            Bucket=BUCKET,
            Key="dst",
            CopySourceIfMatch='"0123456789abcdef0123456789abcdef"',
        )
    assert changed.value.response["Error"]["Code"] == "PreconditionFailed"
    etag = fake.head_object(Bucket=BUCKET, Key="src")["ETag"]
    fake.copy_object(
        CopySource={"Bucket": BUCKET, "Key": "src"},
        Bucket=BUCKET,
        Key="dst",
        CopySourceIfMatch=etag,
    )
    assert fake.get_object(Bucket=BUCKET, Key="dst")["Body"].read() == b"x\n"


def test_requests_are_checked_against_botocore_s_model(fake):
    with pytest.raises(ParamValidationError):
        fake.get_object(Bucket=BUCKET)  # no Key
    with pytest.raises(ParamValidationError):
        fake.put_object(Bucket=BUCKET, Key="k", Body=b"", Unknown=1)


def test_listings_page_by_1000_keys_under_a_prefix_as_moto_lists(account, fake):
    keys = [f"in/{n:05d}.csv" for n in range(2_345)] + ["other/x", "in-not/y"]
    for key in keys:
        put_directly(BUCKET, key, b"1\n")
        fake.seed_lines(BUCKET, key, 2)
    for name, s3 in both(account, fake):
        pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="in/"))
        assert [len(page["Contents"]) for page in pages] == [1000, 1000, 345], name
        listed = [obj["Key"] for page in pages for obj in page["Contents"]]
        assert listed == sorted(k for k in keys if k.startswith("in/")), name
        one = s3.list_objects_v2(Bucket=BUCKET, Prefix="in/00007", MaxKeys=1)
        assert [obj["Key"] for obj in one["Contents"]] == ["in/00007.csv"], name


def test_multipart_copies_assemble_the_same_bytes_as_moto(account, fake):
    part = b"a" * (5 * 1024 * 1024)
    for _, s3 in both(account, fake):
        s3.put_object(Bucket=BUCKET, Key="p1", Body=part)
        s3.put_object(Bucket=BUCKET, Key="p2", Body=b"tail\n")
    for name, s3 in both(account, fake):
        upload = s3.create_multipart_upload(Bucket=BUCKET, Key="merged")["UploadId"]
        first = s3.upload_part_copy(
            Bucket=BUCKET,
            Key="merged",
            UploadId=upload,
            PartNumber=1,
            CopySource={"Bucket": BUCKET, "Key": "p1"},
            CopySourceRange=f"bytes=0-{len(part) - 1}",
        )
        second = s3.upload_part(
            Bucket=BUCKET, Key="merged", UploadId=upload, PartNumber=2, Body=b"tail\n"
        )
        s3.complete_multipart_upload(
            Bucket=BUCKET,
            Key="merged",
            UploadId=upload,
            MultipartUpload={
                "Parts": [
                    {"PartNumber": 1, "ETag": first["CopyPartResult"]["ETag"]},
                    {"PartNumber": 2, "ETag": second["ETag"]},
                ]
            },
        )
        body = s3.get_object(Bucket=BUCKET, Key="merged")["Body"].read()
        assert body == part + b"tail\n", name


def test_large_objects_are_repeated_lines_that_cost_no_file(tmp_path):
    fake = FakeS3(tmp_path, Meter())
    fake.seed_lines(BUCKET, "big.csv", 10**12, line=b"1,2,3\n")  # 1 TB
    assert fake.head_object(Bucket=BUCKET, Key="big.csv")["ContentLength"] == 10**12
    ranged = fake.get_object(Bucket=BUCKET, Key="big.csv", Range="bytes=4-15")["Body"].read()
    assert ranged == b"3\n1,2,3\n1,2,"
    assert list(tmp_path.iterdir()) == []


def test_each_call_is_charged_its_latency_and_transfer_time(tmp_path):
    meter = Meter()
    fake = FakeS3(tmp_path, meter)
    fake.put_object(Bucket=BUCKET, Key="k", Body=b"x" * 1_000_000)
    fake.get_object(Bucket=BUCKET, Key="k")["Body"].read()
    fake.head_object(Bucket=BUCKET, Key="k")
    assert meter.calls == {"s3:PutObject": 1, "s3:GetObject": 1, "s3:HeadObject": 1}
    expected = 2 * s3_seconds(1_000_000) + S3_REQUEST_SECONDS
    assert meter.aws_seconds() == pytest.approx(expected)


def shard_item(run_id, number):
    if number >= 12_000:
        return None
    return {
        "run_id": shard_partition(run_id, number),
        "sk": f"SHARD#{number:05d}",
        "shard": number,
        "status": MISSING,
        "name": f"part-{number}",
    }


def test_the_fake_table_pages_made_up_shard_items_by_1_mb_and_counts_writes(account):
    meter = Meter()
    fake = FakeTable(account.table.table, meter, shard_item, item_bytes=200)
    table = StatusTable(fake)
    items = table.shards("r-1")
    assert [item["shard"] for item in items] == list(range(12_000))
    # 750 items of 200 bytes under each of the 16 partition keys: one 1 MB page each
    assert meter.calls["dynamodb:Query"] == SHARD_PARTITIONS
    with table.shard_writer("r-1") as put:
        for number in range(60):
            put(number, {"status": MISSING})
    assert fake.shards_written == 60
    assert meter.calls["dynamodb:BatchWriteItem"] == 3  # 25 + 25 + 10


def test_writes_and_reads_take_at_least_what_the_table_and_a_partition_allow(account):
    """A new on-demand table takes 4,000 writes a second, one partition 1,000 writes and
    3,000 read units (4 KB each, consistent): the meter's time is never below them."""
    meter = Meter()
    fake = FakeTable(account.table.table, meter, shard_item, item_bytes=200)
    with fake.batch_writer() as writer:
        for number in range(2_000):
            writer.put_item(Item={"run_id": "one-key", "sk": f"SHARD#{number:05d}"})
    assert meter.floors() == {
        "dynamodb table writes": pytest.approx(0.5),
        "dynamodb writes to one-key": pytest.approx(2.0),
    }
    assert meter.aws_seconds() == pytest.approx(2.0)  # above 80 requests of 10 ms
    spread = Meter()
    StatusTable(FakeTable(account.table.table, spread, shard_item)).shards("r-1")
    read_units = 750 * 200 / 4096
    assert spread.floors()["dynamodb reads of r-1#0"] == pytest.approx(read_units / 3000)


def test_each_pool_of_worker_threads_spreads_its_own_calls():
    """Two pools at once (64 readers, 4 writers) are timed each over its own threads: the
    writers' calls are not diluted over the readers'."""
    meter, both_readers = Meter(), threading.Barrier(2)

    def read():
        both_readers.wait()  # each reader thread makes one call
        meter.charge("read", 2.0)

    def write():
        meter.charge("write", 3.0)

    with ThreadPoolExecutor(2, thread_name_prefix="readers") as readers:
        for _ in range(2):
            readers.submit(read)
    with ThreadPoolExecutor(1, thread_name_prefix="writers") as writers:
        writers.submit(write)
    meter.charge("main", 0.5)
    assert meter.aws_seconds() == pytest.approx(0.5 + 4.0 / 2 + 3.0)
    assert meter.aws_seconds(overlapped=True) == pytest.approx(3.0)
