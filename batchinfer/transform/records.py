"""Framing of one (decompressed) file into request bodies (spec R5-R8: how a file becomes records
and request bodies).

SplitType None: the whole object is one request. SplitType Line: a record is the bytes up to
and including ``\\n`` (``\\r\\n`` kept as is); a final line without ``\\n`` is a record; an
empty line is a record, unless the job skips blank lines (batchinfer's own option, local
jobs only): then an empty line (``\\n`` or ``\\r\\n``) is dropped before batching and not
numbered, though its bytes count as read. SingleRecord sends one record per request;
MultiRecord as many consecutive records as fit in the payload limit, counted in request body
bytes.

Without a per-record transformation, MultiRecord batches are cut from large reads with
``bytes.rfind`` and counted with ``bytes.count``: no Python work per record. Memory stays
bounded by the read size plus the payload limit, per request in flight (no limit means the
whole file is one body).
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from batchinfer.errors import ValidationError
from batchinfer.transform.record_errors import RecordError
from batchinfer.units import MIB

READ_SIZE = 8 * MIB
# The records that skipping blank lines drops: empty lines.
BLANK_LINES = (b"\n", b"\r\n")

# (original record, its 1-based number) -> the bytes it contributes to the request body.
RecordFilter = Callable[[bytes, int], bytes]


class Readable(Protocol):
    """What framing reads records from: a binary file, or a stream that reads like one (a
    decompressing or counting wrapper, an S3 body)."""

    def read(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Batch:
    """One request body and the records it holds."""

    body: bytes
    first_record: int
    record_count: int
    # The original records, kept only when a join needs them (R17: a CSV join adds the prediction to
    # its row, one line per record; R18: a JSON join puts the prediction under SageMakerOutput).
    records: tuple[bytes, ...] | None = None
    # Bytes of the source its records took, before any InputFilter: progress is counted in
    # it, and it is where the next batch starts, for a run that stops and resumes.
    input_bytes: int = 0

    @property
    def last_record(self) -> int:
        return self.first_record + max(self.record_count, 1) - 1


def frame(
    source: Readable,
    *,
    name: str,
    split_type: str,
    batch_strategy: str,
    max_payload_bytes: int | None,
    record_filter: RecordFilter | None = None,
    keep_records: bool = False,
    read_size: int = READ_SIZE,
    first_record: int = 1,
    skip_blank_lines: bool = False,
) -> Iterator[Batch]:
    """Yield the request bodies of ``source`` in order.

    ``record_filter`` rewrites each record before it is packed (the InputFilter);
    ``keep_records`` keeps the original records on each batch; ``skip_blank_lines`` drops
    empty lines (SplitType Line only). An oversize record, or an oversize SplitType None
    object, raises RecordError naming ``name`` and the record number. ``first_record``
    numbers the first record of ``source`` (a file read from a record boundary after
    ``first_record - 1`` records).
    """
    skip = first_record - 1
    if skip_blank_lines:
        check_skip_blank_lines(split_type)
    if split_type == "None":
        return _whole_object(source, name, max_payload_bytes, record_filter, keep_records)
    if split_type != "Line":
        raise ValidationError(
            f"split_type (SplitType): {split_type!r} is accepted by SageMaker but not "
            "implemented by the local engine; use Line or None"
        )
    single = batch_strategy == "SingleRecord"
    if record_filter is None and not keep_records and not skip_blank_lines:
        if single:
            return _single_records(source, name, max_payload_bytes, read_size, skip)
        if max_payload_bytes is not None:
            return _multi_records(source, name, max_payload_bytes, read_size, skip)
    records = _iter_records(source, name, None, read_size)
    return _pack(
        records, name, max_payload_bytes, single, record_filter, keep_records, skip,
        skip_blank_lines,
    )  # fmt: skip


def check_skip_blank_lines(split_type: str) -> None:
    """Skipping blank lines needs Line records; ValidationError naming the option."""
    if split_type != "Line":
        raise ValidationError(
            f"--skip-blank-lines: needs --split-type Line; with split_type (SplitType) "
            f"{split_type} a record is not a line"
        )


def empty_line(batch: Batch) -> int | None:
    """The number of the first record of ``batch`` that is an empty line, or None."""
    records = batch.records or [line + b"\n" for line in batch.body.split(b"\n")[:-1]]
    return next(
        (batch.first_record + i for i, record in enumerate(records) if record in BLANK_LINES),
        None,
    )


def count_records(data: bytes) -> int:
    """Number of Line records in ``data`` (a final line without ``\\n`` counts)."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def oversize_error(
    name: str, number: int, limit: int, size: int | None = None, *, whole: bool = False
) -> RecordError:
    """How a file fails when record ``number`` (``size`` bytes) is over ``limit`` (R8: a record
    larger than MaxPayloadInMB fails its file); ``whole`` when the record is the whole file
    (SplitType None)."""
    mb = limit / MIB
    size_text = f"{size} bytes" if size is not None else "more than that"
    raise_limit = "raise max_payload_mb (up to 100, or 0 for no limit)"
    remedy = (
        "with split_type None the whole file is one record: set split_type Line "
        f"(--split-type Line) to send it line by line, or {raise_limit}"
        if whole
        else f"{raise_limit} or shorten the record"
    )
    return RecordError(
        name, number, f"is larger than MaxPayloadInMB={mb:g} ({limit} bytes): {size_text}; {remedy}"
    )


def _whole_object(
    source: Readable,
    name: str,
    limit: int | None,
    record_filter: RecordFilter | None,
    keep_records: bool,
) -> Iterator[Batch]:
    if limit is not None and record_filter is None:
        data = source.read(limit + 1)
        if len(data) > limit:
            raise oversize_error(name, 1, limit, whole=True)
    else:
        data = source.read()
    body = record_filter(data, 1) if record_filter else data
    if limit is not None and len(body) > limit:
        raise oversize_error(name, 1, limit, len(body), whole=True)
    yield Batch(body, 1, 1, (data,) if keep_records else None, len(data))


def _multi_records(
    source: Readable, name: str, limit: int, read_size: int, skip: int
) -> Iterator[Batch]:
    """Greedy MultiRecord batches: the longest run of whole records within ``limit`` bytes.

    Reads go straight into one reusable buffer (``readinto``); only batch bodies are copied.
    """
    chunk = read_size
    buf = bytearray(limit + chunk + 1)
    view = memoryview(buf)
    start, end, done, eof = 0, 0, skip, False
    while True:
        if not eof and end - start <= limit:
            if start:
                view[: end - start] = view[start:end]
                start, end = 0, end - start
            got = read_into(source, view[end : end + chunk])
            if got:
                end += got
                continue
            eof = True
        if start == end:
            return
        if eof and end - start <= limit:
            body = bytes(view[start:end])
            yield Batch(body, done + 1, count_records(body), input_bytes=len(body))
            return
        cut = buf.rfind(b"\n", start, start + limit)
        if cut < 0:
            raise oversize_error(name, done + 1, limit)
        body = bytes(view[start : cut + 1])
        count = body.count(b"\n")
        yield Batch(body, done + 1, count, input_bytes=len(body))
        done += count
        start = cut + 1


def read_into(source: Readable, target: memoryview) -> int:
    """Fill ``target`` from ``source`` (``readinto`` when it has one); returns the bytes read."""
    readinto = getattr(source, "readinto", None)
    if readinto is not None:
        return readinto(target) or 0
    data = source.read(len(target))
    target[: len(data)] = data
    return len(data)


def _iter_records(
    source: Readable, name: str, limit: int | None, read_size: int, skip: int = 0
) -> Iterator[bytes]:
    """Line records one by one; a record over ``limit`` raises before it is fully buffered
    (named as record ``skip`` + its number)."""
    buf, pos, number = b"", 0, skip
    while True:
        newline = buf.find(b"\n", pos)
        if newline >= 0:
            number += 1
            if limit is not None and newline + 1 - pos > limit:
                raise oversize_error(name, number, limit, newline + 1 - pos)
            yield buf[pos : newline + 1]
            pos = newline + 1
            continue
        if limit is not None and len(buf) - pos > limit:
            raise oversize_error(name, number + 1, limit)
        data = source.read(read_size)
        if not data:
            if pos < len(buf):
                yield buf[pos:]
            return
        buf = buf[pos:] + data
        pos = 0


def _single_records(
    source: Readable, name: str, limit: int | None, read_size: int, skip: int
) -> Iterator[Batch]:
    records = _iter_records(source, name, limit, read_size, skip)
    for number, record in enumerate(records, skip + 1):
        yield Batch(record, number, 1, input_bytes=len(record))


def _pack(
    records: Iterator[bytes],
    name: str,
    limit: int | None,
    single: bool,
    record_filter: RecordFilter | None,
    keep_records: bool,
    skip: int,
    skip_blank_lines: bool,
) -> Iterator[Batch]:
    """Batches of filtered records, each body within ``limit`` bytes; a blank line that
    ``skip_blank_lines`` drops still counts in a batch's input bytes, so that resuming
    after a batch starts where it ends."""
    parts: list[bytes] = []
    originals: list[bytes] = []
    size, consumed, first, number = 0, 0, skip + 1, skip

    def batch() -> Batch:
        kept = tuple(originals) if keep_records else None
        return Batch(b"".join(parts), first, len(parts), kept, consumed)

    for record in records:
        if skip_blank_lines and record in BLANK_LINES:
            consumed += len(record)
            continue
        number += 1
        part = record_filter(record, number) if record_filter else record
        if limit is not None and len(part) > limit:
            raise oversize_error(name, number, limit, len(part))
        if parts and (single or (limit is not None and size + len(part) > limit)):
            yield batch()
            parts, originals, size, consumed, first = [], [], 0, 0, number
        parts.append(part)
        size += len(part)
        consumed += len(record)
        if keep_records:
            originals.append(record)
    if parts:
        yield batch()
