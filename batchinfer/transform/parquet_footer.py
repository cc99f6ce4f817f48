"""What a Parquet file's footer says: its rows, its row groups (rows, bytes, where each
lies) and its columns' names, read with the standard library alone, so that the engines'
clients and the pipeline's Lambdas (which have no pyarrow) can count a file's records and
plan its shards from its last bytes.

A Parquet file ends with its metadata (a Thrift ``FileMetaData`` in the compact protocol),
the metadata's length (4 bytes, little-endian) and the magic ``PAR1``; it also starts with
``PAR1``. The whole metadata is read (:mod:`batchinfer.transform.thrift_compact`) and kept, for
:mod:`batchinfer.transform.parquet_files` to write footers of its own from it; a file's rows
alone are read from the metadata's head (:func:`rows_at_end`).
"""

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from batchinfer.transform.thrift_compact import Struct, read_struct

MAGIC = b"PAR1"
TAIL_BYTES = 8  # the metadata's length and the magic
# Enough of a file's end to hold the footer of most files: one ranged read, then another
# when the footer is longer.
FOOTER_GUESS = 64 * 1024


class ParquetError(ValueError):
    """The bytes are not a Parquet file, or its footer cannot be read; the message says what
    is wrong, for the caller to name the file."""


@dataclass(frozen=True)
class RowGroup:
    """One row group: its rows, its data's uncompressed bytes, and the byte range its column
    chunks occupy in the file (``start`` to ``start + size``)."""

    rows: int
    uncompressed_bytes: int
    start: int
    size: int


@dataclass(frozen=True)
class ParquetFooter:
    """The footer of one Parquet file."""

    rows: int
    row_groups: tuple[RowGroup, ...]
    columns: tuple[str, ...]  # the top-level columns, in the file's order
    metadata_bytes: int  # the Thrift metadata's length
    metadata: Struct = field(repr=False, compare=False)  # the whole FileMetaData

    @property
    def footer_bytes(self) -> int:
        """The bytes the footer takes at the file's end: metadata, length and magic."""
        return self.metadata_bytes + TAIL_BYTES


def metadata_length(tail: bytes) -> int:
    """The metadata's length from a file's last 8 bytes; ParquetError when they do not end
    in the magic."""
    if len(tail) < TAIL_BYTES or tail[-4:] != MAGIC:
        raise ParquetError("does not end with PAR1: not a Parquet file, or a truncated one")
    return int.from_bytes(tail[-8:-4], "little")


def read_footer(end: bytes, file_size: int) -> ParquetFooter:
    """The footer from ``end``, the last bytes of a ``file_size``-byte file (at least the
    whole footer: see :attr:`ParquetFooter.footer_bytes`)."""
    length = _checked_length(end, file_size)
    if length + TAIL_BYTES > len(end):
        raise ValueError(f"read_footer needs the last {length + TAIL_BYTES} bytes of the file")
    metadata = end[len(end) - TAIL_BYTES - length : len(end) - TAIL_BYTES]
    try:
        return _footer(read_struct(metadata), length, file_size)
    except _UNREADABLE as exc:
        if isinstance(exc, ParquetError):
            raise
        raise ParquetError(f"has a footer that cannot be read ({type(exc).__name__})") from None


def rows_at_end(read_range: Callable[[int, int], bytes], file_size: int) -> int:
    """The rows of a ``file_size``-byte Parquet file read through ``read_range(start, end)``,
    from the head of its metadata alone: its first fields (version, schema, rows), not its
    row groups, which make most of a large footer and of the time to read it. One read of
    the file's last :data:`FOOTER_GUESS` bytes; when the metadata is longer, reads of its
    head, four times longer each time, until the rows are in it (a longer schema, or fields
    written out of order, need more of it). ParquetError when the file is not a whole
    Parquet file, as far as its end shows."""
    end = read_range(max(0, file_size - FOOTER_GUESS), file_size)
    length = _checked_length(end, file_size)
    start = file_size - TAIL_BYTES - length
    if length + TAIL_BYTES <= len(end):
        head = end[len(end) - TAIL_BYTES - length : len(end) - TAIL_BYTES]
    else:
        head = read_range(start, start + min(FOOTER_GUESS, length))
    while True:
        whole = len(head) >= length
        try:
            rows = read_struct(head, last_field=_NUM_ROWS).get(_NUM_ROWS)
            if rows is None and whole:  # written after a later field: decode them all
                rows = read_struct(head).get(_NUM_ROWS)
        except _UNREADABLE as exc:
            if whole:
                raise ParquetError(
                    f"has a footer that cannot be read ({type(exc).__name__})"
                ) from None
            rows = None  # the head ends within the fields before the rows
        if rows is not None:
            if not isinstance(rows, int) or rows < 0:
                raise ParquetError(f"says it holds {rows!r} rows: a damaged footer")
            return rows
        if whole:
            raise ParquetError("has a footer without its number of rows")
        head = read_range(start, start + min(length, 4 * len(head)))


def _checked_length(end: bytes, file_size: int) -> int:
    """The metadata's length from ``end`` (the file's last bytes); ParquetError when the
    file cannot hold it."""
    if file_size <= len(MAGIC) + TAIL_BYTES:
        raise ParquetError(f"is {file_size} bytes: too short to be a Parquet file")
    length = metadata_length(end[-TAIL_BYTES:])
    if length + TAIL_BYTES + len(MAGIC) > file_size:
        raise ParquetError(
            f"says its metadata is {length} bytes, more than the file holds: a truncated file"
        )
    return length


def footer_at_end(read_range: Callable[[int, int], bytes], file_size: int) -> ParquetFooter:
    """The footer of a ``file_size``-byte file read through ``read_range(start, end)``: one
    read of its last :data:`FOOTER_GUESS` bytes, and one more when the footer is longer."""
    end = read_range(max(0, file_size - FOOTER_GUESS), file_size)
    needed = metadata_length(end[-TAIL_BYTES:]) + TAIL_BYTES
    if needed > len(end) and needed <= file_size:
        end = read_range(file_size - needed, file_size)
    return read_footer(end, file_size)


def footer_of(data: bytes) -> ParquetFooter:
    """The footer of the Parquet file ``data`` (a whole file); ParquetError when it does not
    start with the magic either."""
    if not data.startswith(MAGIC):
        raise ParquetError("does not start with PAR1: not a Parquet file")
    return read_footer(data[-(metadata_length(data[-TAIL_BYTES:]) + TAIL_BYTES) :], len(data))


# What reading metadata that is not Thrift's compact protocol raises.
_UNREADABLE = (IndexError, KeyError, TypeError, ValueError, struct.error)

# --- FileMetaData, as parquet.thrift numbers its fields ------------------------------------

_SCHEMA, _NUM_ROWS, _ROW_GROUPS = 2, 3, 4
_NAME, _NUM_CHILDREN = 4, 5  # SchemaElement
_COLUMNS, _TOTAL_BYTE_SIZE, _RG_NUM_ROWS = 1, 2, 3  # RowGroup
_META_DATA = 3  # ColumnChunk
_CM_COMPRESSED, _CM_DATA_PAGE, _CM_DICTIONARY_PAGE = 7, 9, 11  # ColumnMetaData


def _footer(fields: Struct, length: int, file_size: int) -> ParquetFooter:
    listed = fields.get(_ROW_GROUPS)
    groups = tuple(_row_group(group) for group in (listed.items if listed else []))
    data_end = file_size - length - TAIL_BYTES
    if any(group.start < len(MAGIC) or group.start + group.size > data_end for group in groups):
        raise ParquetError("has a row group that lies outside the file: a truncated file")
    return ParquetFooter(
        rows=int(fields[_NUM_ROWS]),
        row_groups=groups,
        columns=_top_level_names(fields[_SCHEMA].items),
        metadata_bytes=length,
        metadata=fields,
    )


def _row_group(group: Struct) -> RowGroup:
    """A row group's rows and bytes; its range runs from its first column chunk's first page
    (a dictionary page where there is one) to its last chunk's end. A chunk with no page (an
    offset of 0: a row group of no rows) takes no bytes."""
    starts, ends = [], []
    for chunk in group[_COLUMNS].items:
        meta: Struct = chunk[_META_DATA]
        pages = [meta[key] for key in (_CM_DATA_PAGE, _CM_DICTIONARY_PAGE) if meta.get(key)]
        if pages:
            starts.append(min(pages))
            ends.append(min(pages) + meta[_CM_COMPRESSED])
    start = min(starts, default=len(MAGIC))
    return RowGroup(
        rows=int(group[_RG_NUM_ROWS]),
        uncompressed_bytes=int(group[_TOTAL_BYTE_SIZE]),
        start=start,
        size=max(ends, default=start) - start,
    )


def _top_level_names(schema: list[Struct]) -> tuple[str, ...]:
    """The root's children, skipping each one's own descendants (nested columns)."""
    names, index = [], 1
    for _ in range(int(schema[0].get(_NUM_CHILDREN, 0))):
        names.append(bytes(schema[index][_NAME]).decode("utf-8"))
        index = _after_subtree(schema, index)
    return tuple(names)


def _after_subtree(schema: list[Struct], index: int) -> int:
    children = int(schema[index].get(_NUM_CHILDREN, 0))
    index += 1
    for _ in range(children):
        index = _after_subtree(schema, index)
    return index
