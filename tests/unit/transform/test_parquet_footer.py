"""The Parquet footer read with the standard library: what pyarrow's own reader says of the
same files, whatever their columns, row groups, compression and encodings; and a clear
ParquetError for bytes that are not a whole Parquet file."""

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchinfer.transform.parquet_footer import (
    FOOTER_GUESS,
    MAGIC,
    ParquetError,
    footer_of,
    metadata_length,
    read_footer,
    rows_at_end,
)
from batchinfer.transform.thrift_compact import read_struct, write_struct
from tests.support.parquet_tables import column_names, parquet_bytes, table_of


@settings(deadline=None, max_examples=60)
@given(
    rows=st.integers(0, 600),
    names=column_names(5),
    group=st.integers(1, 700),
    compression=st.sampled_from(["none", "snappy", "gzip", "zstd"]),
    dictionary=st.booleans(),
    statistics=st.booleans(),
)
def test_the_footer_says_what_pyarrow_reads(
    rows, names, group, compression, dictionary, statistics
):
    table = table_of(names, rows)
    data = parquet_bytes(
        table,
        row_group_size=group,
        compression=compression,
        use_dictionary=dictionary,
        write_statistics=statistics,
    )
    footer = footer_of(data)
    metadata = pq.ParquetFile(io.BytesIO(data)).metadata
    assert footer.rows == metadata.num_rows == rows
    assert rows_at_end(reader(data, []), len(data)) == rows  # from the metadata's head alone
    assert footer.columns == tuple(names)
    assert footer.footer_bytes == metadata.serialized_size + 8
    assert len(footer.row_groups) == metadata.num_row_groups
    for index, group_read in enumerate(footer.row_groups):
        expected = metadata.row_group(index)
        assert group_read.rows == expected.num_rows
        assert group_read.uncompressed_bytes == expected.total_byte_size
        chunks = [expected.column(j) for j in range(expected.num_columns)]
        # pyarrow gives 0 (data) or None (dictionary) for a page a chunk does not have
        pages = [[o for o in (c.data_page_offset, c.dictionary_page_offset) if o] for c in chunks]
        spans = [
            (min(p), min(p) + c.total_compressed_size)
            for p, c in zip(pages, chunks, strict=True)
            if p
        ]
        start = min((begin for begin, _ in spans), default=4)
        assert (group_read.start, group_read.size) == (
            start,
            max((end for _, end in spans), default=start) - start,
        )


def test_the_footer_is_read_from_the_file_end_alone():
    data = parquet_bytes(pa.table({"a": range(50_000)}), row_group_size=10_000)
    end = data[-FOOTER_GUESS:]
    assert read_footer(end, len(data)) == footer_of(data)
    needed = metadata_length(data[-8:]) + 8
    with pytest.raises(ValueError, match=f"needs the last {needed} bytes"):
        read_footer(data[-(needed - 1) :], len(data))


def reader(data: bytes, reads: list[tuple[int, int]]):
    """``read_range`` of ``data``, noting each range it is asked for in ``reads``."""

    def read_range(start: int, end: int) -> bytes:
        reads.append((start, end))
        return data[start:end]

    return read_range


@pytest.mark.parametrize(
    ("columns", "groups", "most_reads"),
    [(1, 10, 1), (40, 400, 2), (4_000, 1, 4), (2_000, 20, 4)],
    ids=["footer in the end read", "row groups past it", "schema past the head read",
         "schema and row groups past it"],
)  # fmt: skip
def test_rows_are_read_from_the_head_of_the_metadata(columns, groups, most_reads):
    """A Parquet run's Plan reads each object's rows this way: the file's last 64 KiB; when
    the footer is longer, the metadata's head, four times longer each time, until the rows
    are in it: the row groups after the schema and the rows are not read."""
    table = pa.table({f"column_{i:05d}_{'x' * 40}": [1.5] * groups for i in range(columns)})
    data = parquet_bytes(table, row_group_size=1)
    reads: list[tuple[int, int]] = []
    assert rows_at_end(reader(data, reads), len(data)) == groups
    assert len(reads) <= most_reads
    length = metadata_length(data[-8:])
    if length > 4 * FOOTER_GUESS and groups > 1:  # most of the metadata is left unread
        assert sum(end - start for start, end in reads) < length / 2


def _rewritten(data: bytes, metadata: bytes) -> bytes:
    """``data`` with its metadata replaced by ``metadata``."""
    length = metadata_length(data[-8:])
    return data[: -8 - length] + metadata + len(metadata).to_bytes(4, "little") + MAGIC


def test_rows_written_after_the_row_groups_are_still_found():
    """Thrift lets a writer put a struct's fields in any order: with the rows after the row
    groups, the whole metadata is read."""
    data = parquet_bytes(pa.table({"x": [1.0] * 10}))
    fields = read_struct(data[-8 - metadata_length(data[-8:]) : -8])
    kind, rows = fields.fields.pop(3)
    zigzag = (3 << 1).to_bytes(1, "little"), (rows << 1).to_bytes(1, "little")
    moved = write_struct(fields)[:-1] + bytes([kind]) + zigzag[0] + zigzag[1] + b"\x00"
    changed = _rewritten(data, moved)
    assert pq.ParquetFile(io.BytesIO(changed)).metadata.num_rows == 10
    assert rows_at_end(reader(changed, []), len(changed)) == 10


def test_a_negative_row_count_is_a_damaged_footer():
    data = parquet_bytes(pa.table({"x": [1.0] * 10}))
    fields = read_struct(data[-8 - metadata_length(data[-8:]) : -8])
    fields.set(3, fields.fields[3][0], -5)
    changed = _rewritten(data, write_struct(fields))
    with pytest.raises(ParquetError, match="says it holds -5 rows: a damaged footer"):
        rows_at_end(reader(changed, []), len(changed))


GOOD = parquet_bytes(pa.table({"a": range(100), "b": [str(i) for i in range(100)]}))
META = GOOD[-(metadata_length(GOOD[-8:]) + 8) :]  # the metadata, its length and the magic


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"a,b\n1,2\n", "does not start with PAR1: not a Parquet file"),
        (GOOD[:-1], "does not end with PAR1: not a Parquet file, or a truncated one"),
        (GOOD[: len(GOOD) // 2], "does not end with PAR1"),
        (MAGIC + b"\xff" * 4 + MAGIC, "is 12 bytes: too short to be a Parquet file"),
        (MAGIC + b"x" * 40 + MAGIC, "says its metadata is 2021161080 bytes, more than the file"),
        (GOOD[:40] + META, "lies outside the file"),
        (GOOD[: -len(META)] + b"\xff" * (len(META) - 8) + GOOD[-8:], "footer that cannot be"),
    ],
    ids=["csv", "no end magic", "cut in half", "too short", "length past start", "body cut",
         "metadata damaged"],
)  # fmt: skip
def test_bytes_that_are_not_a_whole_parquet_file_are_refused_saying_why(data, message):
    with pytest.raises(ParquetError, match=message):
        footer_of(data)
    if data.startswith(MAGIC) and "lies outside" not in message:  # what the end shows
        with pytest.raises(ParquetError, match=message):
            rows_at_end(reader(data, []), len(data))
