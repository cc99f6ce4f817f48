"""What a Parquet file's footer says: its rows, its row groups (rows, bytes, where each
lies) and its columns' names, read with the standard library alone, so that the engines'
clients and the pipeline's Lambdas (which have no pyarrow) can count a file's records and
plan its shards from its last bytes.

A Parquet file ends with its metadata (a Thrift ``FileMetaData`` in the compact protocol),
the metadata's length (4 bytes, little-endian) and the magic ``PAR1``; it also starts with
``PAR1``. Only the fields used here are decoded; the others are skipped by their wire type.
"""

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
    if file_size <= len(MAGIC) + TAIL_BYTES:
        raise ParquetError(f"is {file_size} bytes: too short to be a Parquet file")
    length = metadata_length(end[-TAIL_BYTES:])
    if length + TAIL_BYTES + len(MAGIC) > file_size:
        raise ParquetError(
            f"says its metadata is {length} bytes, more than the file holds: a truncated file"
        )
    if length + TAIL_BYTES > len(end):
        raise ValueError(f"read_footer needs the last {length + TAIL_BYTES} bytes of the file")
    metadata = end[len(end) - TAIL_BYTES - length : len(end) - TAIL_BYTES]
    try:
        fields = _Reader(metadata).struct()
        return _footer(fields, length, file_size)
    except (IndexError, KeyError, TypeError, ValueError, struct.error) as exc:
        if isinstance(exc, ParquetError):
            raise
        raise ParquetError(f"has a footer that cannot be read ({type(exc).__name__})") from None


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


# --- FileMetaData, as parquet.thrift numbers its fields ------------------------------------

_SCHEMA, _NUM_ROWS, _ROW_GROUPS = 2, 3, 4
_NAME, _NUM_CHILDREN = 4, 5  # SchemaElement
_COLUMNS, _TOTAL_BYTE_SIZE, _RG_NUM_ROWS = 1, 2, 3  # RowGroup
_META_DATA = 3  # ColumnChunk
_CM_COMPRESSED, _CM_DATA_PAGE, _CM_DICTIONARY_PAGE = 7, 9, 11  # ColumnMetaData


Fields = dict[int, Any]  # a Thrift struct: each field's value by its id


def _footer(fields: Fields, length: int, file_size: int) -> ParquetFooter:
    groups = tuple(_row_group(group) for group in fields.get(_ROW_GROUPS, []))
    data_end = file_size - length - TAIL_BYTES
    if any(group.start < len(MAGIC) or group.start + group.size > data_end for group in groups):
        raise ParquetError("has a row group that lies outside the file: a truncated file")
    return ParquetFooter(
        rows=int(fields[_NUM_ROWS]),
        row_groups=groups,
        columns=_top_level_names(fields[_SCHEMA]),
        metadata_bytes=length,
    )


def _row_group(group: Fields) -> RowGroup:
    """A row group's rows and bytes; its range runs from its first column chunk's first page
    (a dictionary page where there is one) to its last chunk's end. A chunk with no page (an
    offset of 0: a row group of no rows) takes no bytes."""
    starts, ends = [], []
    for chunk in group[_COLUMNS]:
        meta: Fields = chunk[_META_DATA]
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


def _top_level_names(schema: list[Fields]) -> tuple[str, ...]:
    """The root's children, skipping each one's own descendants (nested columns)."""
    names, index = [], 1
    for _ in range(int(schema[0].get(_NUM_CHILDREN, 0))):
        names.append(bytes(schema[index][_NAME]).decode("utf-8"))
        index = _after_subtree(schema, index)
    return tuple(names)


def _after_subtree(schema: list[Fields], index: int) -> int:
    children = int(schema[index].get(_NUM_CHILDREN, 0))
    index += 1
    for _ in range(children):
        index = _after_subtree(schema, index)
    return index


# --- Thrift compact protocol ---------------------------------------------------------------

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(
    13
)


class _Reader:
    """Reads Thrift compact-protocol values: structs as ``{field id: value}``."""

    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def struct(self) -> "Fields":
        fields: Fields = {}
        last = 0
        while True:
            header = self._byte()
            kind = header & 0x0F
            if kind == _STOP:
                return fields
            delta = header >> 4
            last = last + delta if delta else _zigzag(self._varint())
            fields[last] = self._value(kind, in_field=True)

    def _value(self, kind: int, in_field: bool = False) -> Any:
        if kind in (_TRUE, _FALSE):
            # A bool field carries its value in its type; a bool in a list takes a byte.
            return kind == _TRUE if in_field else self._byte() == 1
        if kind == _BYTE:
            return self._byte()
        if kind in (_I16, _I32, _I64):
            return _zigzag(self._varint())
        if kind == _DOUBLE:
            self._at += 8
            return struct.unpack_from("<d", self._data, self._at - 8)[0]
        if kind == _BINARY:
            size = self._varint()
            self._at += size
            if self._at > len(self._data):
                raise IndexError("binary past the end")
            return self._data[self._at - size : self._at]
        if kind in (_LIST, _SET):
            header = self._byte()
            size = header >> 4 if header >> 4 != 15 else self._varint()
            return [self._value(header & 0x0F) for _ in range(size)]
        if kind == _MAP:
            size = self._varint()
            types = self._byte() if size else 0
            return {self._value(types >> 4): self._value(types & 0x0F) for _ in range(size)}
        if kind == _STRUCT:
            return self.struct()
        raise TypeError(f"unknown compact type {kind}")

    def _byte(self) -> int:
        value = self._data[self._at]
        self._at += 1
        return value

    def _varint(self) -> int:
        value = shift = 0
        while True:
            byte = self._byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)
