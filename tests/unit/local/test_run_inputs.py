"""Which input files a local job refuses before any work: gzip data read as uncompressed."""

import gzip
from pathlib import Path

import pytest

from batchinfer.engine.inputs import InputFile, check_compression
from batchinfer.errors import ValidationError


def _files(tmp_path: Path, **contents: bytes) -> list[InputFile]:
    files = []
    for name, data in contents.items():
        path = tmp_path / name
        path.write_bytes(data)
        files.append(InputFile(path, name))
    return files


def test_a_gzip_file_without_compression_type_is_refused_naming_it(tmp_path):
    files = _files(tmp_path, a_csv=b"1,2\n", b_csv=gzip.compress(b"1,2\n"))
    with pytest.raises(ValidationError) as info:
        check_compression(files, "None", "text/csv")
    assert str(info.value) == (
        f"{tmp_path / 'b_csv'}: is gzip-compressed (starts with 1f 8b) but compression_type is "
        "None; set --compression-type Gzip to decompress it before the model"
    )


def test_gzip_bytes_pass_when_decompressed_or_meant_for_the_model(tmp_path):
    files = _files(tmp_path, d=gzip.compress(b"1,2\n"), empty=b"", one=b"\x1f")
    check_compression(files, "Gzip", "text/csv")
    check_compression(files, "None", "application/gzip; charset=binary")
    check_compression(files[1:], "None", "text/csv")
    check_compression([InputFile(tmp_path / "gone", "gone")], "None", None)
