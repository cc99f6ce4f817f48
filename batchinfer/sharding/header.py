"""The header line of an input (local file or S3 object), read before any split: its names
go to the model server, and every input of a run must share it."""

import hashlib
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

from batchinfer.errors import InputError
from batchinfer.sharding.gzip_split import READ_SIZE, decompressed_chunks, split_header
from batchinfer.sharding.planner import FIRST_WINDOW


def read_header_line(source: Any, *, compressed: bool) -> bytes:
    """The first line of ``source`` (a LocalSource or S3Source; decompressed when
    ``compressed``), with its ``\\n``; only its first bytes are read, by ranged reads of
    growing windows. InputError naming the source when it has no complete line."""
    reads = _StartReads(source)
    chunks: Iterator[bytes] = (
        decompressed_chunks(cast(BinaryIO, reads), source=source.uri, on_read=lambda _done: None)
        if compressed
        else iter(lambda: reads.read(READ_SIZE), b"")
    )
    return split_header(chunks, source.uri)[0]


class _StartReads:
    """``source`` read from its start as a stream, each read one ranged read of a window
    that doubles from FIRST_WINDOW up to the size asked for."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self._position = 0
        self._window = FIRST_WINDOW

    def read(self, size: int) -> bytes:
        end = min(self._source.size, self._position + min(self._window, size))
        if end <= self._position:
            return b""
        data: bytes = self._source.read_range(self._position, end)
        self._position, self._window = end, self._window * 2
        return data


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
