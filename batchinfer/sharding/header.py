"""The header line of an input (local file or S3 object), read before any split: its names
go to the model server, and every input of a run must share it."""

import hashlib
from collections.abc import Iterator
from typing import Any

from batchinfer.errors import InputError
from batchinfer.sharding.gzip_split import READ_SIZE, decompressed_chunks, split_header


def read_header_line(source: Any, *, compressed: bool) -> bytes:
    """The first line of ``source`` (a LocalSource or S3Source; decompressed when
    ``compressed``), with its ``\\n``; only its first chunks are read. InputError naming the
    source when it has no complete line."""
    stream = source.open_stream()
    try:
        chunks: Iterator[bytes] = (
            decompressed_chunks(stream, source=source.uri, on_read=lambda _done: None)
            if compressed
            else iter(lambda: stream.read(READ_SIZE), b"")
        )
        return split_header(chunks, source.uri)[0]
    finally:
        stream.close()


def header_digest(line: bytes) -> str:
    """A short fingerprint of a header line (its SHA-256, hex), which a split compares."""
    return hashlib.sha256(line.rstrip(b"\r\n")).hexdigest()


def check_header(line: bytes | None, expected: str | None, *, source: str) -> None:
    """InputError when ``source``'s header line is not the one whose digest is ``expected``
    (None: nothing to compare)."""
    if expected is not None and (line is None or header_digest(line) != expected):
        raise InputError(
            f"{source}: its header row differs from the run's first input's; the inputs of "
            "one run share one header (the model server is told one set of names)"
        )
