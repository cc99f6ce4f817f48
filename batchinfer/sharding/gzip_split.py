"""Gzip input (spec R11: Gzip input is decompressed and its output written plain): streamed
decompression, cuts at line boundaries, gzip shards.

Memory is bounded whatever the input size: compressed input is read 1 MiB at a time,
decompressed output is produced at most 4 MiB at a time, and shards are written as they
fill. Concatenated (multi-member) gzip files are read whole, as ``gzip -d`` does. With a
shard count the decompressed size must be known first, so the input is read twice; with
a target shard size it is read once and each cut is the first ``\\n`` at or after
``shard_size`` bytes into the shard.
"""

import zlib
from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any, BinaryIO

from batchinfer.errors import InputError, ValidationError
from batchinfer.sharding.index import Shard
from batchinfer.sharding.names import MAX_SHARDS, shard_name
from batchinfer.sharding.planner import shard_count, shard_targets

READ_SIZE = 1 << 20
OUT_CHUNK = 4 << 20
MAX_HEADER = 1 << 20
# Shards are intermediate data read once by the job: favour speed over size.
COMPRESS_LEVEL = 1
_GZIP = 16 + zlib.MAX_WBITS


def decompressed_chunks(
    stream: BinaryIO, *, source: str, on_read: Callable[[int], None]
) -> Iterator[bytes]:
    """Yield the decompressed content of a (possibly multi-member) gzip stream."""
    decompressor = zlib.decompressobj(_GZIP)
    started = False
    for data in iter(lambda: stream.read(READ_SIZE), b""):
        on_read(len(data))
        while True:
            started = started or bool(data)
            try:
                out = decompressor.decompress(data, OUT_CHUNK)
            except zlib.error as exc:
                raise InputError(f"{source} is not valid gzip: {exc}") from None
            if out:
                yield out
            if decompressor.eof:
                data = decompressor.unused_data
                decompressor = zlib.decompressobj(_GZIP)
                started = False
                if not data:
                    break
            else:
                data = decompressor.unconsumed_tail
                if not data and len(out) < OUT_CHUNK:
                    break
    if started:
        raise InputError(f"{source} is truncated: its last gzip member does not end")


class _Rechunker:
    """Writes decompressed bytes into gzip shards, each cut after the first ``\\n`` at or
    past its target offset (``next_target(shard_start)``, None for no further cut)."""

    def __init__(
        self, sink: Any, input_name: str, start: int, next_target: Callable[[int], int | None]
    ) -> None:
        self.sink = sink
        self.input_name = input_name
        self.next_target = next_target
        self.pos = start
        self.shards: list[Shard] = []
        self._writer: Any = None

    def feed(self, chunk: bytes) -> None:
        while chunk:
            if self._writer is None:
                self._open()
            if self._target is not None:
                newline = chunk.find(b"\n", max(0, self._target - 1 - self.pos))
                if newline >= 0:
                    self._write(chunk[: newline + 1])
                    self.finish()
                    chunk = chunk[newline + 1 :]
                    continue
            self._write(chunk)
            return

    def finish(self) -> None:
        """Close the shard being written, if any."""
        if self._writer is None:
            return
        self._writer.write(self._compressor.flush())
        size = self._writer.finish()
        self.shards.append(
            Shard(self._name, self.sink.uri(self._name), self._start, self.pos, size)
        )
        self._writer = None

    def _open(self) -> None:
        if len(self.shards) >= MAX_SHARDS:
            raise ValidationError(f"more than {MAX_SHARDS} shards: choose a larger shard size")
        self._name = shard_name(self.input_name, len(self.shards))
        self._writer = self.sink.open(self._name)
        self._compressor = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, _GZIP)
        self._start = self.pos
        self._target = self.next_target(self.pos)

    def _write(self, data: bytes) -> None:
        self._writer.write(self._compressor.compress(data))
        self.pos += len(data)


def split_header(chunks: Iterator[bytes], source: str) -> tuple[bytes, bytes]:
    """Read the first line from ``chunks``: (header line, the bytes after it)."""
    head = bytearray()
    for chunk in chunks:
        head += chunk
        newline = head.find(b"\n")
        if newline >= 0:
            return bytes(head[: newline + 1]), bytes(head[newline + 1 :])
        if len(head) > MAX_HEADER:
            raise InputError(f"{source}: header line is longer than {MAX_HEADER} bytes")
    if not head:
        raise InputError(f"{source} is empty: there is nothing to split")
    raise InputError(f"{source} has a header line but no records")


def split_gzip(
    source: Any,
    sink: Any,
    *,
    shards: int | None,
    shard_size: int | None,
    header: bool,
    progress: Callable[[int, int], None] | None,
) -> tuple[bytes | None, list[Shard]]:
    """Re-chunk the gzip ``source`` into gzip shards opened on ``sink``.

    Returns the dropped header line (or None) and the shards, whose ``start``/``end`` are
    offsets in the decompressed data. ``progress(done, total)`` counts compressed bytes read
    (over both passes when a shard count is given).
    """
    shard_count(0, shards=shards, shard_size=shard_size)  # settings checked before reading
    passes = 1 if shards is None else 2
    done = 0

    def on_read(size: int) -> None:
        nonlocal done
        done += size
        if progress is not None:
            progress(done, source.size * passes)

    def chunks() -> Iterator[bytes]:
        return decompressed_chunks(source.open_stream(), source=source.uri, on_read=on_read)

    total = sum(map(len, chunks())) if shards is not None else None
    stream = chunks()
    header_line, rest = split_header(stream, source.uri) if header else (None, b"")
    data_start = len(header_line or b"")
    targets: list[int] = []
    if total is not None:
        count = shard_count(total - data_start, shards=shards, shard_size=None)
        targets = shard_targets(data_start, total - data_start, count)

    def next_target(shard_start: int) -> int | None:
        if total is None:
            assert shard_size is not None  # no count, so a size (shard_count checked it)
            return shard_start + shard_size
        later = bisect_right(targets, shard_start)
        return targets[later] if later < len(targets) else None

    rechunker = _Rechunker(sink, source.name, data_start, next_target)
    for chunk in chain([rest], stream):
        rechunker.feed(chunk)
    rechunker.finish()
    if not rechunker.shards:
        detail = "has a header line but no records" if header else "is empty: nothing to split"
        raise InputError(f"{source.uri} {detail}")
    if total is not None and rechunker.pos != total:
        raise InputError(f"{source.uri} changed while being split; run the split again")
    return header_line, rechunker.shards
