"""merge_objects on moto: the part plan executed byte for byte (ranged part copies and
uploads gathered from ranged GETs), the upload aborted on any error; merge_parquet joining
Parquet answers into one Parquet object the same way. moto enforces S3's
5 MiB minimum part, so the minimum stays real and only the maximum part is scaled down."""

import io
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from botocore.exceptions import ClientError

from batchinfer.errors import InputError
from batchinfer.multipart import CopyPart, PartLimits, plan_concatenation
from batchinfer.pipeline.storage.merge import merge_objects, merge_parquet
from batchinfer.uris import parse_s3_uri
from tests.support.s3_requests import RequestLog, error_response

from .conftest import BUCKET

MiB = 1024**2
# Copy parts of at most 12 MiB, gathered uploads of at most 10 MiB.
SMALL = PartLimits(max_part=12 * MiB, max_upload=10 * MiB)


@pytest.fixture
def s3_log(account) -> RequestLog:
    return RequestLog(account.s3)


def put_sources(account, sizes: list[int]) -> tuple[list, list[bytes]]:
    rng = random.Random(len(sizes))
    datas = [rng.randbytes(size) for size in sizes]
    uris = [account.put(f"job/out/s-{i}.csv.out", data) for i, data in enumerate(datas)]
    return [parse_s3_uri(uri) for uri in uris], datas


def open_uploads(account) -> list[str]:
    listed = account.s3.list_multipart_uploads(Bucket=BUCKET)
    return [upload["Key"] for upload in listed.get("Uploads", [])]


def test_small_and_large_sources_concatenate_byte_for_byte(account, s3_log):
    """A large source over the part limit is copied in ranges after lending its head to the
    byte before it; a 4 MiB source borrows from the next; the last byte is copied."""
    sizes = [1, 20 * MiB + 1, 4 * MiB, 0, 30 * MiB, 1]
    sources, datas = put_sources(account, sizes)
    target = parse_s3_uri(f"s3://{BUCKET}/out/d.csv.out")
    merge_objects(account.s3, sources, target, SMALL)
    assert s3_log.bytes_read == 10 * MiB, "only the bytes of the uploaded parts are read"

    assert account.get(target.uri) == b"".join(datas)
    plan = plan_concatenation(sizes, SMALL)
    copies = [part.piece for part in plan if isinstance(part, CopyPart)]
    assert [
        (c["CopySource"]["Key"], c["CopySourceRange"]) for c in s3_log.calls["UploadPartCopy"]
    ] == [(sources[p.source].key, f"bytes={p.start}-{p.end - 1}") for p in copies]
    assert len(copies) == 6 and s3_log.count("UploadPart") == len(plan) - len(copies) == 2
    assert open_uploads(account) == []


def test_one_source_over_the_part_limit_is_copied_in_ranges(account, s3_log):
    sources, datas = put_sources(account, [25 * MiB])
    target = parse_s3_uri(f"s3://{BUCKET}/out/big.out")
    merge_objects(account.s3, sources, target, SMALL)
    assert s3_log.count("UploadPartCopy") == 3 and s3_log.bytes_read == 0
    assert account.get(target.uri) == datas[0]


@pytest.mark.parametrize("sizes", [[0], [0, 0], [3, 0, 5]])
def test_empty_and_tiny_sources_make_a_complete_object(account, sizes):
    sources, datas = put_sources(account, sizes)
    target = parse_s3_uri(f"s3://{BUCKET}/out/tiny.out")
    merge_objects(account.s3, sources, target)
    assert account.get(target.uri) == b"".join(datas)


def test_a_failed_part_aborts_the_upload_and_leaves_no_target(account, s3_log):
    sources, _ = put_sources(account, [1, 20 * MiB + 1, 4 * MiB, 30 * MiB, 1])
    account.s3.meta.events.register_first(
        "before-call.s3.UploadPart", lambda **_: error_response("InternalError", 500)
    )
    with pytest.raises(ClientError, match="InternalError"):
        merge_objects(account.s3, sources, parse_s3_uri(f"s3://{BUCKET}/out/d.out"), SMALL)
    assert s3_log.count("AbortMultipartUpload") == 1
    assert open_uploads(account) == []
    assert account.keys("out/") == []


def test_more_parts_than_allowed_is_an_input_error_naming_the_target(account, s3_log):
    sources, _ = put_sources(account, [5 * MiB, 1])
    target = parse_s3_uri(f"s3://{BUCKET}/out/d.out")
    message = r"s3://batchinfer-test-data/out/d\.out: cannot merge .* run without merge"
    with pytest.raises(InputError, match=message):
        merge_objects(account.s3, sources, target, PartLimits(max_parts=1))
    assert s3_log.count("CreateMultipartUpload") == 0
    assert account.keys("out/") == []


def parquet_answer(rows: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    table = pa.table({"x": rng.random(rows), "prediction": rng.integers(0, 2, rows)})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="none")
    return sink.getvalue()


def test_parquet_answers_join_into_one_parquet_object_copying_what_s3_can(account, s3_log):
    """A 12 MiB answer between two small ones: the joined file's row groups are theirs in
    order, the large one's bytes copied by S3 (moto holds every part but the last to
    5 MiB), and a second merge of the same answers (a retried MergeObject) writes the same
    bytes to the same key."""
    answers = [parquet_answer(rows, seed) for seed, rows in enumerate((300, 1_500_000, 50))]
    uris = [account.put(f"job/out/s-{i}.parquet.out", a) for i, a in enumerate(answers)]
    target = parse_s3_uri(f"s3://{BUCKET}/out/a.parquet.out")
    merge_parquet(account.s3, [parse_s3_uri(u) for u in uris], target)
    merged = account.get(target.uri)
    expected = pa.concat_tables(pq.read_table(io.BytesIO(a)) for a in answers)
    assert pq.read_table(io.BytesIO(merged)).equals(expected)
    groups = [pq.ParquetFile(io.BytesIO(a)).metadata.num_row_groups for a in answers]
    assert pq.ParquetFile(io.BytesIO(merged)).metadata.num_row_groups == sum(groups)
    assert s3_log.count("UploadPartCopy") >= 1
    merge_parquet(account.s3, [parse_s3_uri(u) for u in uris], target)
    assert account.get(target.uri) == merged
    assert open_uploads(account) == []


def test_an_answer_that_is_not_parquet_fails_the_merge_naming_it_and_writes_nothing(account):
    good = account.put("job/out/s-0.parquet.out", parquet_answer(10, 0))
    bad = account.put("job/out/s-1.parquet.out", b"prediction\n1\n")
    target = parse_s3_uri(f"s3://{BUCKET}/out/b.parquet.out")
    with pytest.raises(InputError, match=r"s-1\.parquet\.out: does not end with PAR1"):
        merge_parquet(account.s3, [parse_s3_uri(good), parse_s3_uri(bad)], target)
    assert not account.s3.list_objects_v2(Bucket=BUCKET, Prefix="out/b").get("Contents")
    assert open_uploads(account) == []
