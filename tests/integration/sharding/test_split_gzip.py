"""Gzip input (spec R11): streamed re-chunking into gzip shards, checked with real gzip."""

import gzip
import io
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from batchinfer.errors import InputError
from batchinfer.sharding import ShardIndex, split
from batchinfer.sharding.gzip_split import OUT_CHUNK, decompressed_chunks

GZIP = shutil.which("gzip")


def gzip_file(path: Path, data: bytes) -> str:
    """Compress ``data`` into ``path`` with the gzip program."""
    path.write_bytes(
        subprocess.run([GZIP, "-c"], input=data, capture_output=True, check=True).stdout
    )
    return str(path)


def gunzip(path: str) -> bytes:
    """Decompress ``path`` with the gzip program (which also verifies the CRC)."""
    return subprocess.run([GZIP, "-dc", path], capture_output=True, check=True).stdout


def test_r11_gzip_shards_decompress_to_the_input_in_order(tmp_path, csv_lines):
    data = csv_lines(20_000)
    index = split(gzip_file(tmp_path / "x.jsonl.gz", data), str(tmp_path / "out"), shards=4)
    assert index.names == [f"x.part-{n:05d}.jsonl.gz" for n in range(4)]
    assert index.compression == "Gzip"
    parts = [gunzip(uri) for uri in index.uris]
    assert b"".join(parts) == data
    assert all(part.endswith(b"\n") for part in parts)
    assert [(s.start, s.end) for s in index.shards] == [
        (sum(map(len, parts[:n])), sum(map(len, parts[: n + 1]))) for n in range(4)
    ]
    assert [s.size for s in index.shards] == [Path(u).stat().st_size for u in index.uris]
    assert ShardIndex.load(index.location) == index


def test_shard_size_header_and_multi_member_input(tmp_path, csv_lines):
    body = csv_lines(6000)
    source = tmp_path / "m.csv.gz"
    source.write_bytes(gzip.compress(b"id,v\n" + body[:50_000]) + gzip.compress(body[50_000:]))
    index = split(str(source), str(tmp_path / "out"), shard_size=40_000, header=True)
    assert index.header == b"id,v\n"
    parts = [gunzip(uri) for uri in index.uris]
    assert b"".join(parts) == body
    assert len(parts) > 1
    assert all(40_000 <= len(part) < 40_000 + 100 for part in parts[:-1])
    assert 0 < len(parts[-1]) < 40_000 + 100


def test_r11_compression_type_gzip_without_gz_extension(tmp_path):
    source = tmp_path / "d.csv"
    source.write_bytes(gzip.compress(b"1,2\n3,4\n5,6"))
    index = split(str(source), str(tmp_path / "out"), shards=2, compression_type="Gzip")
    assert index.names == ["d.part-00000.csv", "d.part-00001.csv"]
    assert [gunzip(uri) for uri in index.uris] == [b"1,2\n3,4\n", b"5,6"]


def test_rerun_gives_identical_gzip_bytes(tmp_path, csv_lines):
    source = gzip_file(tmp_path / "d.csv.gz", csv_lines(3000))
    first = split(source, str(tmp_path / "out"), shards=3)
    first_bytes = [Path(u).read_bytes() for u in first.uris]
    second = split(source, str(tmp_path / "out"), shards=3)
    assert [Path(u).read_bytes() for u in second.uris] == first_bytes


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", r"bad\.csv\.gz is empty"),
        (gzip.compress(b"", mtime=0), r"bad\.csv\.gz is empty"),
        (b"not gzip at all\n", r"bad\.csv\.gz is not valid gzip"),
        (gzip.compress(b"1,2\n" * 1000, mtime=0)[:-20], r"bad\.csv\.gz is truncated"),
    ],
    ids=["empty-file", "empty-gzip", "not-gzip", "truncated"],
)
def test_bad_gzip_input_is_an_input_error_and_writes_nothing(tmp_path, content, message):
    source = tmp_path / "bad.csv.gz"
    source.write_bytes(content)
    out = tmp_path / "out"
    with pytest.raises(InputError, match=message):
        split(str(source), str(out), shard_size=100)
    assert list(out.iterdir()) == []


def test_gzip_header_without_records_is_an_input_error(tmp_path):
    source = tmp_path / "h.csv.gz"
    source.write_bytes(gzip.compress(b"id,v\n"))
    with pytest.raises(InputError, match=r"h\.csv\.gz has a header line but no records"):
        split(str(source), str(tmp_path / "out"), shards=2, header=True)


def test_decompression_output_is_bounded_for_highly_compressed_input():
    data = (b"0" * 999 + b"\n") * 40_000  # 40 MB that compresses ~1000:1
    compressed = zlib.compress(data, 9, wbits=31)
    stream = io.BytesIO(compressed)
    sizes = [len(c) for c in decompressed_chunks(stream, source="z.gz", on_read=lambda _: None)]
    assert sum(sizes) == len(data)
    assert max(sizes) <= OUT_CHUNK


def test_gzip_on_s3_round_trip(s3, bucket, csv_lines):
    data = csv_lines(10_000)
    source = bucket.put("in/d.csv.gz", gzip.compress(data))
    progress = []
    index = split(
        source,
        f"s3://{bucket.name}/out/",
        shards=3,
        s3_client=s3,
        progress=lambda done, total: progress.append((done, total)),
    )
    assert index.uris == [f"s3://{bucket.name}/out/d.part-{n:05d}.csv.gz" for n in range(3)]
    assert b"".join(gzip.decompress(bucket.get(uri)) for uri in index.uris) == data
    assert index.etag == s3.head_object(Bucket=bucket.name, Key="in/d.csv.gz")["ETag"]
    size = len(bucket.get(source))
    assert progress[-1] == (2 * size, 2 * size)  # a shard count reads the input twice
    assert bucket.open_uploads() == []


def test_r3_gzip_input_within_one_shard_is_not_copied(tmp_path):
    source = gzip_file(tmp_path / "s.csv.gz", b"1,2\n3,4\n")
    out = tmp_path / "out"
    index = split(source, str(out), shard_size=1 << 20)
    assert index.uris == [str(Path(source).resolve())]
    assert (index.shards[0].start, index.shards[0].end) == (0, 8)
    assert sorted(p.name for p in out.iterdir()) == ["s.csv.gz.index.json", "s.csv.gz.manifest"]
