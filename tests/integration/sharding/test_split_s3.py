"""split() on S3 against moto: server-side UploadPartCopy, ETag pinning, bytes read (R3, R4)."""

import json

import pytest
from botocore.exceptions import ClientError

from batchinfer.errors import InputError
from batchinfer.sharding import ShardIndex, split
from batchinfer.sharding import s3 as s3_module
from batchinfer.sharding.planner import FIRST_WINDOW
from batchinfer.transform.parquet_footer import MAGIC as PARQUET_MAGIC
from tests.support.s3_requests import error_response


def test_r4_shards_are_part_copies_of_byte_ranges_with_the_source_etag(
    s3, bucket, s3_log, csv_lines
):
    data = csv_lines(40_000)  # ~1 MB
    source = bucket.put("in/data.csv", data)
    etag = s3.head_object(Bucket=bucket.name, Key="in/data.csv")["ETag"]
    index = split(source, f"s3://{bucket.name}/shards/", shards=4, s3_client=s3)
    assert s3_log.bytes_read <= 3 * FIRST_WINDOW + len(PARQUET_MAGIC)  # not Parquet: lines
    reads = list(s3_log.calls["GetObject"])

    assert index.names == [f"data.part-{n:05d}.csv" for n in range(4)]
    assert index.uris == [f"s3://{bucket.name}/shards/{name}" for name in index.names]
    assert b"".join(bucket.get(uri) for uri in index.uris) == data
    assert [shard.size for shard in index.shards] == [len(bucket.get(u)) for u in index.uris]
    copies = s3_log.calls["UploadPartCopy"]
    assert len(copies) == 4
    assert {c["CopySourceIfMatch"] for c in copies} == {etag}
    assert sorted(c["CopySourceRange"] for c in copies) == sorted(
        f"bytes={s.start}-{s.end - 1}" for s in index.shards
    )
    assert all(c["IfMatch"] == etag and c["Range"] for c in reads)
    assert s3_log.count("UploadPart") == 0
    manifest = json.loads(bucket.get(index.manifest))
    assert manifest == [{"prefix": f"s3://{bucket.name}/shards/"}, *index.names]
    assert ShardIndex.load(index.location, s3_client=s3).shards == index.shards
    assert index.etag == etag
    assert bucket.open_uploads() == []


def test_header_dropped_and_bytes_read_stay_small(s3, bucket, s3_log, csv_lines):
    data = b"id,value\n" + csv_lines(20_000)
    source = bucket.put("in/h.csv", data)
    index = split(source, f"s3://{bucket.name}/out", shard_size=100_000, header=True, s3_client=s3)
    # a window after each of the cuts, the window holding the header, the header itself,
    # and the first 4 bytes, to know it is not Parquet
    assert s3_log.bytes_read <= FIRST_WINDOW * len(index.shards) + len(b"id,value\n") + 4
    assert index.header == b"id,value\n"
    assert b"".join(bucket.get(uri) for uri in index.uris) == data[9:]


def test_r3_object_within_one_shard_is_not_copied(s3, bucket, s3_log):
    source = bucket.put("in/small.jsonl", b'{"a":1}\n{"a":2}\n')
    index = split(source, f"s3://{bucket.name}/out/", shard_size=1 << 20, s3_client=s3)
    assert index.uris == [source]
    assert index.manifest_entries() == [{"prefix": f"s3://{bucket.name}/in/"}, "small.jsonl"]
    assert s3_log.count("CreateMultipartUpload") == s3_log.count("UploadPartCopy") == 0
    assert bucket.keys("out/") == ["out/small.jsonl.index.json", "out/small.jsonl.manifest"]


def test_rerun_gives_the_same_keys_and_bytes(s3, bucket, csv_lines):
    source = bucket.put("in/d.csv", csv_lines(5000))
    first = split(source, f"s3://{bucket.name}/out/", shards=3, s3_client=s3)
    first_keys = bucket.keys("out/")
    first_bytes = [bucket.get(uri) for uri in first.uris]
    second = split(source, f"s3://{bucket.name}/out/", shards=3, s3_client=s3)
    assert second == first
    assert bucket.keys("out/") == first_keys
    assert [bucket.get(uri) for uri in second.uris] == first_bytes


def test_source_replaced_mid_split_fails_and_leaves_no_shards(s3, bucket, csv_lines):
    source = bucket.put("in/d.csv", csv_lines(5000))

    reads = []

    def replace_after_planning(**_):
        reads.append(1)
        if len(reads) == 2:  # the last of the two cut-point reads, before any copy
            bucket.put("in/d.csv", csv_lines(6000))

    s3.meta.events.register("after-call.s3.GetObject", replace_after_planning)
    with pytest.raises(InputError, match=r"s3://shards-test/in/d\.csv changed while being split"):
        split(source, f"s3://{bucket.name}/out/", shards=3, s3_client=s3)
    assert bucket.keys("out/") == []
    assert bucket.open_uploads() == []


def test_precondition_failed_on_part_copy_is_an_input_error_naming_the_object(
    s3, bucket, csv_lines
):
    """S3 answers 412 when CopySourceIfMatch no longer matches (moto 5.2.5 ignores the
    header, so the hook answers as S3 does)."""
    source = bucket.put("in/d.csv", csv_lines(5000))
    calls = []

    def answer_412(**_):
        calls.append(1)
        return error_response("PreconditionFailed", 412) if len(calls) == 2 else None

    s3.meta.events.register_first("before-call.s3.UploadPartCopy", answer_412)
    with pytest.raises(InputError, match=r"s3://shards-test/in/d\.csv changed while being split"):
        split(source, f"s3://{bucket.name}/out/", shards=3, s3_client=s3)
    assert bucket.open_uploads() == []
    assert bucket.keys("out/") == []


def test_any_copy_failure_aborts_every_multipart_upload(s3, bucket, s3_log, csv_lines):
    source = bucket.put("in/d.csv", csv_lines(5000))
    s3.meta.events.register_first(
        "before-call.s3.UploadPartCopy",
        lambda params, **_: (
            error_response("AccessDenied", 403) if "part-00002" in params["url_path"] else None
        ),
    )
    with pytest.raises(ClientError, match="AccessDenied"):
        split(source, f"s3://{bucket.name}/out/", shards=4, s3_client=s3)
    assert s3_log.count("AbortMultipartUpload") == s3_log.count("CreateMultipartUpload") > 0
    assert bucket.open_uploads() == []
    assert bucket.keys("out/") == []


def test_ranges_over_the_part_limit_are_copied_in_several_parts(s3, bucket, s3_log, monkeypatch):
    """Parts of a multipart copy must be <= 5 GiB, and all but the last >= 5 MiB."""
    monkeypatch.setattr(s3_module, "MAX_PART_SIZE", 6 << 20)
    line = b"y" * 1023 + b"\n"
    data = line * (20 << 10)  # 20 MiB
    source = bucket.put("in/big.csv", data)
    index = split(source, f"s3://{bucket.name}/out/", shards=2, s3_client=s3)
    assert b"".join(bucket.get(uri) for uri in index.uris) == data
    ranges = [c["CopySourceRange"] for c in s3_log.calls["UploadPartCopy"]]
    assert len(ranges) == 4
    sizes = [int(r.split("-")[1]) - int(r.removeprefix("bytes=").split("-")[0]) + 1 for r in ranges]
    assert all(5 << 20 <= size <= 6 << 20 for size in sizes)


def test_missing_object_is_an_input_error(s3, bucket):
    with pytest.raises(InputError, match=r"s3://shards-test/in/none\.csv: object not found"):
        split(f"s3://{bucket.name}/in/none.csv", f"s3://{bucket.name}/out/", shards=2, s3_client=s3)


def test_empty_object_is_an_input_error(s3, bucket):
    source = bucket.put("in/empty.csv", b"")
    with pytest.raises(InputError, match=r"s3://shards-test/in/empty\.csv is empty"):
        split(source, f"s3://{bucket.name}/out/", shards=2, s3_client=s3)


def test_loading_a_missing_index_is_an_input_error(s3, bucket):
    with pytest.raises(InputError, match=r"s3://shards-test/x\.index\.json: object not found"):
        ShardIndex.load(f"s3://{bucket.name}/x.index.json", s3_client=s3)
