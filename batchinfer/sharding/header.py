"""The header line of a local input: read once, so its names reach the model server."""

import gzip
from pathlib import Path

from batchinfer.errors import InputError
from batchinfer.sharding.gzip_split import MAX_HEADER


def read_header_line(path: Path, *, compressed: bool) -> bytes:
    """The first line of ``path`` (decompressed when ``compressed``), with its ``\\n``;
    InputError naming the file when it has no line, no record after it, or a line longer
    than any header."""
    try:
        with gzip.open(path, "rb") if compressed else path.open("rb") as stream:
            line = stream.readline(MAX_HEADER + 1)
            more = bool(stream.read(1))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"{path}: cannot read its header line: {exc}") from exc
    if len(line) > MAX_HEADER:
        raise InputError(f"{path}: header line is longer than {MAX_HEADER} bytes")
    if not line:
        raise InputError(f"{path} is empty: it has no header line")
    if not (line.endswith(b"\n") and more):
        raise InputError(f"{path} has a header line but no records")
    return line
