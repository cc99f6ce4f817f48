"""``batchinfer split`` as a split job's container runs it: the arguments Plan writes
(split_job.py), one S3 object (gzip or plain) into shards by multipart upload with bounded
memory, and the same shard index the SplitObject Lambda writes (R3, R4, R11)."""

import gzip
import random

import pytest
from typer.testing import CliRunner

from batchinfer.cli import app
from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.state import SplitTask
from batchinfer.pipeline.jobs.split_job import JOB, LAMBDA, choose_splitter, split_arguments
from batchinfer.pipeline.steps.split_object import split_object
from batchinfer.sharding import ShardIndex
from batchinfer.sharding import s3 as sharding_s3
from batchinfer.sharding.gzip_split import OUT_CHUNK
from batchinfer.units import MIB


def run_split(task: SplitTask) -> None:
    result = CliRunner().invoke(app, ["split", *split_arguments(task)])
    assert result.exit_code == 0, result.output


def random_lines(size: int) -> bytes:
    rng = random.Random(3)
    lines, total = [], 0
    while total < size:
        lines.append(rng.randbytes(rng.randint(20, 200)).hex().encode() + b"\n")
        total += len(lines[-1])
    return b"".join(lines)


def test_gzip_object_streams_into_multipart_shards_the_lambda_would_write(s3, bucket, monkeypatch):
    """Random hex lines barely compress, so each gzip shard takes several parts; no part
    and no write buffer exceeds the part size plus one compressed output chunk."""
    monkeypatch.setattr(sharding_s3, "WRITE_PART_SIZE", 5 * MIB)  # S3's smallest part
    bodies = []
    upload_part = sharding_s3.S3ShardWriter._upload_buffer

    def observed(writer):
        bodies.append(len(writer._buffer))
        return upload_part(writer)

    monkeypatch.setattr(sharding_s3.S3ShardWriter, "_upload_buffer", observed)
    data = random_lines(24 * MIB)
    source = bucket.put("in/big.csv.gz", gzip.compress(data, compresslevel=1))
    task = SplitTask(source, f"s3://{bucket.name}/job/", shard_size=12 * MIB)
    run_split(task)
    index = ShardIndex.load(f"s3://{bucket.name}/job/big.csv.gz.index.json", s3_client=s3)
    assert len(index.shards) == 2
    assert b"".join(gzip.decompress(bucket.get(uri)) for uri in index.uris) == data
    assert len(bodies) >= 2 * len(index.shards), "several parts per shard"
    assert max(bodies) <= 5 * MIB + OUT_CHUNK
    assert bucket.open_uploads() == []
    lambda_task = SplitTask(source, f"s3://{bucket.name}/lambda/", shard_size=12 * MIB)
    split_object(lambda_task, s3=s3)
    for job_uri, lambda_uri in zip(
        index.uris,
        ShardIndex.load(f"s3://{bucket.name}/lambda/big.csv.gz.index.json", s3_client=s3).uris,
        strict=True,
    ):
        assert bucket.get(job_uri) == bucket.get(lambda_uri), "the same shards"


def test_plain_object_with_header_and_shard_count(s3, bucket, csv_lines):
    data = b"a,b\n" + csv_lines(2000)
    source = bucket.put("in/plain.csv", data)
    task = SplitTask(source, f"s3://{bucket.name}/out/", shards=3, header=True)
    run_split(task)
    index = ShardIndex.load(f"s3://{bucket.name}/out/plain.csv.index.json", s3_client=s3)
    assert len(index.shards) == 3 and index.header == b"a,b\n"
    assert b"".join(bucket.get(uri) for uri in index.uris) == csv_lines(2000)


def test_a_broken_object_exits_non_zero_naming_it(s3, bucket):
    source = bucket.put("in/broken.csv.gz", b"\x1f\x8b\x08\x00" + bytes(range(256)))
    result = CliRunner().invoke(
        app, ["split", *split_arguments(SplitTask(source, f"s3://{bucket.name}/o/", shards=2))]
    )
    assert result.exit_code != 0
    assert bucket.keys("o/") == []


@pytest.mark.parametrize(
    ("size", "gzip_input", "splitter"),
    [(2048, True, LAMBDA), (2049, True, JOB), (10**12, False, LAMBDA)],
)
def test_the_splitter_compares_the_decompressed_estimate_with_the_threshold(
    size, gzip_input, splitter
):
    assert choose_splitter(size, gzip=gzip_input, threshold=10 * 1024) == splitter
    assert choose_splitter(size, gzip=gzip_input, threshold=None) == LAMBDA


def test_an_argument_longer_than_a_container_argument_names_the_object():
    long_key = "s3://b/" + "k" * 300
    with pytest.raises(ValidationError, match=r"kkkk.*256"):
        split_arguments(SplitTask(long_key, "s3://b/shards/", shards=2))
