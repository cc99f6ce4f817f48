"""Which input files a local job takes (R4: a key prefix or a ManifestFile selects the input
objects), and those it refuses before any work: gzip data read as uncompressed."""

import gzip
import json
from pathlib import Path

import pytest

from batchinfer.engine.inputs import InputFile, check_leading_bytes, collect_inputs
from batchinfer.errors import InputError, ValidationError
from batchinfer.sharding.selection import InputSelection
from batchinfer.transform.settings import TransformSettings


def _files(tmp_path: Path, **contents: bytes) -> list[InputFile]:
    files = []
    for name, data in contents.items():
        path = tmp_path / name
        path.write_bytes(data)
        files.append(InputFile(path, name))
    return files


def _settings(**given) -> TransformSettings:
    return TransformSettings(**{"content_type": "text/csv", **given})


def test_a_gzip_file_without_compression_type_is_refused_naming_it(tmp_path):
    files = _files(tmp_path, a_csv=b"1,2\n", b_csv=gzip.compress(b"1,2\n"))
    with pytest.raises(ValidationError) as info:
        check_leading_bytes(files, _settings())
    assert str(info.value) == (
        f"{tmp_path / 'b_csv'}: is gzip-compressed (starts with 1f 8b) but compression_type is "
        "None; set --compression-type Gzip to decompress it before the model"
    )


def test_gzip_bytes_pass_when_decompressed_or_meant_for_the_model(tmp_path):
    files = _files(tmp_path, d=gzip.compress(b"1,2\n"), empty=b"", one=b"\x1f")
    check_leading_bytes(files, _settings(compression_type="Gzip"))
    check_leading_bytes(files, _settings(content_type="application/gzip; charset=binary"))
    check_leading_bytes(files[1:], _settings())
    check_leading_bytes([InputFile(tmp_path / "gone", "gone")], _settings(content_type=None))


@pytest.mark.parametrize("content_type", ["text/csv", None])
def test_a_parquet_file_sent_as_another_type_is_refused_naming_it(tmp_path, content_type):
    files = _files(tmp_path, a_csv=b"1,2\n", b_parquet=b"PAR1" + b"\0" * 20 + b"PAR1")
    with pytest.raises(ValidationError) as info:
        check_leading_bytes(files, _settings(content_type=content_type))
    assert str(info.value) == (
        f"{tmp_path / 'b_parquet'}: is a Parquet file (starts with PAR1) but content_type is "
        f"{content_type or 'not set (text/csv)'}; set --content-type application/x-parquet "
        "(each file is then sent whole: --split-type None)"
    )
    parquet = _settings(content_type="application/vnd.apache.parquet", split_type="None")
    check_leading_bytes(files[1:], parquet)


def _tree(root: Path, *names: str) -> Path:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"1,2\n")
    return root


SPARK_OUTPUT = (
    "part-00000.csv",
    "day1/a.csv",
    "_SUCCESS",
    "_committed_4711",
    ".part-00000.csv.crc",
    "_temporary/0/part-00001.csv",
    ".cache/b.csv",
)


def test_r4_a_directory_leaves_out_hidden_and_underscore_files_and_folders(tmp_path):
    data = _tree(tmp_path / "in", *SPARK_OUTPUT)
    assert [f.name for f in collect_inputs([data])] == ["day1/a.csv", "part-00000.csv"]


def test_r4_a_file_named_on_the_command_line_or_in_a_manifest_is_always_an_input(tmp_path):
    data = _tree(tmp_path / "in", "_x.csv", ".y.csv", "_dir/z.csv")
    manifest = tmp_path / "list.manifest"
    manifest.write_text(json.dumps([{"prefix": f"{data}/"}, ".y.csv", "_dir/z.csv"]))
    found = collect_inputs([data / "_x.csv", manifest])
    assert [f.name for f in found] == [".y.csv", "_dir/z.csv", "_x.csv"]


def test_r4_a_processing_jobs_input_directory_takes_every_file(tmp_path):
    data = _tree(tmp_path / "in", "_x.csv", "a.csv")
    assert [f.name for f in collect_inputs([data], every_file=True)] == ["_x.csv", "a.csv"]


def test_r4_include_narrows_and_exclude_removes_by_relative_name(tmp_path):
    data = _tree(tmp_path / "in", "a.csv", "a.json", "day1/b.csv", "day2/c.csv")
    selection = InputSelection(include=("*.csv",), exclude=("day2/*",))
    assert [f.name for f in collect_inputs([data], selection)] == ["a.csv", "day1/b.csv"]
    with pytest.raises(InputError, match=r"\(a\.json\) not selected by exclude '\*\.json'"):
        collect_inputs([data / "a.json"], InputSelection(exclude=("*.json",)))  # named, too


def test_r4_a_selection_that_leaves_nothing_names_the_globs_and_the_files_left_out(tmp_path):
    data = _tree(tmp_path / "in", "a.csv", "b.csv", "_SUCCESS")
    with pytest.raises(InputError) as info:
        collect_inputs([data], InputSelection(include=("*.json",)))
    assert str(info.value) == (
        f"no input files under {data}: 2 files (a.csv, b.csv) not selected by include "
        "'*.json'; 1 file (_SUCCESS) hidden or _-prefixed, which are inputs only when named"
    )
