"""split() on local files: kernel-side copies, names, manifest and index (spec R3, R4, R6)."""

import errno
import json
import os
from pathlib import Path

import pytest

from batchinfer.errors import InputError, ValidationError
from batchinfer.sharding import ShardIndex, split
from batchinfer.sharding import local_files as local_module


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def read_shards(index: ShardIndex) -> bytes:
    return b"".join(Path(uri).read_bytes() for uri in index.uris)


def test_r4_shards_manifest_and_index_written_in_order(tmp_path, csv_lines):
    data = csv_lines(2000)
    source = write(tmp_path / "data.csv", data)
    out = tmp_path / "out"
    index = split(source, str(out), shards=4)

    assert index.names == [f"data.part-{n:05d}.csv" for n in range(4)]
    assert read_shards(index) == data
    assert [shard.size for shard in index.shards] == [Path(u).stat().st_size for u in index.uris]
    assert [s.start for s in index.shards] == [0, *(s.end for s in index.shards[:-1])]
    manifest = json.loads((out / "data.csv.manifest").read_text())
    assert manifest == [{"prefix": f"{out.resolve()}/"}, *index.names]
    assert index.manifest == str(out.resolve() / "data.csv.manifest")
    loaded = ShardIndex.load(index.location)
    assert loaded.shards == index.shards
    assert (loaded.source, loaded.etag, loaded.source_size) == (str(Path(source)), None, len(data))
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*index.names, "data.csv.manifest", "data.csv.index.json"]
    )


def test_header_is_kept_in_the_index_and_not_in_shards(tmp_path, csv_lines):
    data = b"id,value\r\n" + csv_lines(100)
    index = split(write(tmp_path / "h.csv", data), str(tmp_path / "out"), shards=3, header=True)
    assert index.header == b"id,value\r\n"
    assert read_shards(index) == data[len(b"id,value\r\n") :]
    assert ShardIndex.load(index.location).header == b"id,value\r\n"


def test_non_utf8_header_survives_the_json_index(tmp_path):
    header = b"\xe9t\xe9,caf\xe9\n"
    index = split(
        write(tmp_path / "l.csv", header + b"1\n2\n"), str(tmp_path / "o"), shards=2, header=True
    )
    assert ShardIndex.load(index.location).header == header


def test_r3_input_within_one_shard_is_not_copied(tmp_path):
    source = write(tmp_path / "small.jsonl", b'{"a":1}\n{"a":2}\n')
    out = tmp_path / "out"
    index = split(source, str(out), shard_size=1 << 20)
    assert index.uris == [str(Path(source).resolve())]
    assert index.prefix == f"{tmp_path.resolve()}/"
    assert index.manifest_entries() == [{"prefix": f"{tmp_path.resolve()}/"}, "small.jsonl"]
    assert sorted(p.name for p in out.iterdir()) == [
        "small.jsonl.index.json",
        "small.jsonl.manifest",
    ]


def test_sendfile_is_used_when_copy_file_range_is_refused(tmp_path, monkeypatch, csv_lines):
    def refuse(*_args):
        raise OSError(errno.EXDEV, "cross-device")

    sent = []
    real_sendfile = os.sendfile

    def sendfile(*args):
        sent.append(args[3])
        return real_sendfile(*args)

    monkeypatch.setattr(local_module.os, "copy_file_range", refuse)
    monkeypatch.setattr(local_module.os, "sendfile", sendfile)
    data = csv_lines(3000)
    index = split(write(tmp_path / "d.csv", data), str(tmp_path / "out"), shards=5)
    assert read_shards(index) == data
    assert sum(sent) == len(data)


def test_rerun_gives_the_same_names_and_bytes(tmp_path, csv_lines):
    source = write(tmp_path / "d.csv", csv_lines(500))
    first = split(source, str(tmp_path / "out"), shard_size=2000)
    first_bytes = [Path(u).read_bytes() for u in first.uris]
    second = split(source, str(tmp_path / "out"), shard_size=2000)
    assert second == first
    assert [Path(u).read_bytes() for u in second.uris] == first_bytes


def test_failure_mid_split_leaves_no_shards_and_no_index(tmp_path, monkeypatch, csv_lines):
    calls = []
    real = local_module.kernel_copy

    def failing_copy(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(errno.EIO, "I/O error")
        real(*args, **kwargs)

    monkeypatch.setattr(local_module, "kernel_copy", failing_copy)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="I/O error"):
        split(write(tmp_path / "d.csv", csv_lines(1000)), str(out), shards=4)
    assert list(out.iterdir()) == []


def test_source_changed_during_split_is_an_input_error(tmp_path, monkeypatch, csv_lines):
    source = tmp_path / "d.csv"
    write(source, csv_lines(1000))
    real = local_module.kernel_copy

    def copy_then_append(*args, **kwargs):
        real(*args, **kwargs)
        with open(source, "ab") as f:
            f.write(b"late,record\n")

    monkeypatch.setattr(local_module, "kernel_copy", copy_then_append)
    out = tmp_path / "out"
    with pytest.raises(InputError, match=r"d\.csv changed while being split"):
        split(str(source), str(out), shards=2)
    assert list(out.iterdir()) == []


def test_empty_input_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"empty\.csv is empty"):
        split(write(tmp_path / "empty.csv", b""), str(tmp_path / "out"), shards=2)


def test_missing_input_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"nope\.csv: not a readable file"):
        split(str(tmp_path / "nope.csv"), str(tmp_path / "out"), shards=2)


def test_output_that_is_a_file_is_an_input_error(tmp_path):
    source = write(tmp_path / "d.csv", b"1\n2\n")
    with pytest.raises(InputError, match="not a directory"):
        split(source, source, shards=2)


def test_r2_unknown_compression_type_and_mixed_locations_are_rejected(tmp_path):
    source = write(tmp_path / "d.csv", b"1\n2\n")
    with pytest.raises(ValidationError, match="compression_type: 'Zip'"):
        split(source, str(tmp_path / "o"), shards=2, compression_type="Zip")
    with pytest.raises(ValidationError, match="both be local or both be s3"):
        split(source, "s3://bucket/out/", shards=2)


def test_progress_reports_every_byte_copied(tmp_path, csv_lines):
    data = csv_lines(1000)
    seen = []
    split(
        write(tmp_path / "d.csv", data),
        str(tmp_path / "o"),
        shards=4,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert seen[-1] == (len(data), len(data))
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
