"""Parquet files made of the row groups of others without decoding a value: the column
chunks' bytes are copied as they are, and a new footer says where they now lie.

A shard of a file is ``PAR1``, the bytes of a run of its row groups, and
:func:`shard_footer`; one file joined from several is ``PAR1``, each file's row-group bytes
in order, and :func:`joined_footer`. Only the standard library is used, so the pipeline's
Lambdas can split and merge Parquet objects by ranged reads and UploadPartCopy.

A new footer keeps the schema and key-value metadata (Arrow's schema among them), moves
every page offset by where the bytes went, and drops what points outside the copied bytes:
page indexes and Bloom filters, which readers use only to skip pages.
"""

from collections.abc import Sequence

from batchinfer.transform.parquet_footer import MAGIC, ParquetError, ParquetFooter
from batchinfer.transform.thrift_compact import I16, I64, LIST, STRUCT, List, Struct, write_struct

# FileMetaData, RowGroup, ColumnChunk and ColumnMetaData fields, as parquet.thrift numbers them
_SCHEMA, _NUM_ROWS, _ROW_GROUPS, _ENCRYPTION = 2, 3, 4, 8
_RG_COLUMNS, _RG_NUM_ROWS, _RG_FILE_OFFSET, _RG_ORDINAL = 1, 3, 5, 7
_CC_FILE_PATH, _CC_FILE_OFFSET, _CC_META_DATA = 1, 2, 3
_CC_PAGE_INDEX = (4, 5, 6, 7)  # offset index and column index: offsets and lengths
_CC_ENCRYPTED = (8, 9)
_CM_PAGE_OFFSETS = (9, 10, 11)  # data, index and dictionary page
_CM_BLOOM_FILTER = (14, 15)


def data_span(footer: ParquetFooter, first: int = 0, stop: int | None = None) -> tuple[int, int]:
    """The byte range the row groups ``first`` to ``stop`` (exclusive) occupy: from the first
    one's start to the last one's end (the file's first data byte when there are none)."""
    groups = footer.row_groups[first:stop]
    if not groups:
        return len(MAGIC), len(MAGIC)
    return min(g.start for g in groups), max(g.start + g.size for g in groups)


def request_bytes_alone(footer: ParquetFooter, index: int) -> int:
    """The most bytes a request of row group ``index`` alone takes: the magic, its data and
    a footer no larger than the file's (the bound shards of row groups are packed by)."""
    return len(MAGIC) + footer.row_groups[index].size + footer.footer_bytes


def largest_row_group(footer: ParquetFooter) -> tuple[int, int]:
    """The largest row group's index and its first row's number (from 1); ``(0, 1)`` for a
    file of none."""
    first_rows, row = [], 1
    for group in footer.row_groups:
        first_rows.append(row)
        row += group.rows
    if not first_rows:
        return 0, 1
    index = max(range(len(footer.row_groups)), key=lambda i: footer.row_groups[i].size)
    return index, first_rows[index]


def shard_footer(footer: ParquetFooter, first: int, stop: int, *, source: str) -> bytes:
    """The footer of a file holding row groups ``first`` to ``stop`` (exclusive) of the file
    ``footer`` describes, their bytes (:func:`data_span`) right after the magic.
    ParquetError naming ``source`` where the file cannot be split so."""
    _check_copyable(footer, source)
    start, _ = data_span(footer, first, stop)
    listed = footer.metadata[_ROW_GROUPS].items[first:stop]
    groups = [_moved(group, len(MAGIC) - start, i) for i, group in enumerate(listed)]
    rows = sum(group.rows for group in footer.row_groups[first:stop])
    return _file_footer(footer.metadata, groups, rows)


def joined_footer(footers: Sequence[ParquetFooter], names: Sequence[str]) -> bytes:
    """The footer of one file holding every row group of the files ``footers`` describe, in
    order, each file's :func:`data_span` right after the previous one's (the first right
    after the magic). ParquetError naming the file whose schema differs from the first's."""
    if not footers:
        raise ValueError("joined_footer needs at least one footer")
    schema = _schema_bytes(footers[0])
    groups: list[Struct] = []
    at = len(MAGIC)
    for footer, name in zip(footers, names, strict=True):
        _check_copyable(footer, name)
        if _schema_bytes(footer) != schema:
            raise ParquetError(
                f"{name} has other columns or types than {names[0]}; Parquet files are "
                "joined only when their schemas are the same"
            )
        start, end = data_span(footer)
        listed = footer.metadata.get(_ROW_GROUPS)
        for group in listed.items if listed else []:
            groups.append(_moved(group, at - start, len(groups)))
        at += end - start
    return _file_footer(footers[0].metadata, groups, sum(f.rows for f in footers))


def _schema_bytes(footer: ParquetFooter) -> bytes:
    return write_struct(Struct({_SCHEMA: footer.metadata.fields[_SCHEMA]}))


def _check_copyable(footer: ParquetFooter, name: str) -> None:
    """ParquetError naming ``name`` for what a copy of its bytes cannot carry: encryption,
    and column chunks kept in other files."""
    if _ENCRYPTION in footer.metadata.fields:
        raise ParquetError(f"{name} is an encrypted Parquet file; it is not split or joined")
    listed = footer.metadata.get(_ROW_GROUPS)
    for group in listed.items if listed else []:
        for chunk in group[_RG_COLUMNS].items:
            if any(f in chunk.fields for f in _CC_ENCRYPTED):
                raise ParquetError(f"{name} has encrypted columns; it is not split or joined")
            if _CC_FILE_PATH in chunk.fields:
                raise ParquetError(
                    f"{name} keeps column data in other files ({chunk[_CC_FILE_PATH]!r}); "
                    "it is not split or joined"
                )


def _moved(group: Struct, shift: int, ordinal: int) -> Struct:
    """A copy of row group ``group`` whose bytes moved by ``shift``, numbered ``ordinal``."""
    moved = Struct(dict(group.fields))
    chunks = []
    for chunk in group[_RG_COLUMNS].items:
        new_chunk = Struct(dict(chunk.fields))
        new_chunk.drop(*_CC_PAGE_INDEX)
        if chunk.get(_CC_FILE_OFFSET):
            new_chunk.set(_CC_FILE_OFFSET, I64, chunk[_CC_FILE_OFFSET] + shift)
        meta = Struct(dict(chunk[_CC_META_DATA].fields))
        meta.drop(*_CM_BLOOM_FILTER)
        for key in _CM_PAGE_OFFSETS:
            if meta.get(key):
                meta.set(key, I64, meta[key] + shift)
        new_chunk.set(_CC_META_DATA, STRUCT, meta)
        chunks.append(new_chunk)
    moved.set(_RG_COLUMNS, LIST, List(STRUCT, chunks))
    if group.get(_RG_FILE_OFFSET) is not None:
        moved.set(_RG_FILE_OFFSET, I64, group[_RG_FILE_OFFSET] + shift)
    if _RG_ORDINAL in group.fields:
        moved.set(_RG_ORDINAL, I16, ordinal)
    return moved


def _file_footer(metadata: Struct, groups: list[Struct], rows: int) -> bytes:
    """``metadata`` with ``groups`` as its row groups and ``rows`` as its row count, written
    as a file's last bytes: the metadata, its length and the magic."""
    footer = Struct(dict(metadata.fields))
    footer.set(_NUM_ROWS, I64, rows)
    footer.set(_ROW_GROUPS, LIST, List(STRUCT, groups))
    encoded = write_struct(footer)
    return encoded + len(encoded).to_bytes(4, "little") + MAGIC
