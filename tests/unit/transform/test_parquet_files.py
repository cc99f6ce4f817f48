"""Parquet files made of other files' row groups, bytes copied and a footer written: pyarrow
reads each shard as the rows of its row groups and the joined file as every row in order,
types, statistics and metadata kept, whatever the columns, compression and encodings; the
Thrift writer gives back the footer pyarrow wrote byte for byte."""

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchinfer.sharding.parquet_split import row_group_runs
from batchinfer.transform.parquet_files import data_span, joined_footer, shard_footer
from batchinfer.transform.parquet_footer import MAGIC, ParquetError, footer_of, metadata_length
from batchinfer.transform.thrift_compact import read_struct, write_struct
from tests.support.parquet_tables import column_names, parquet_bytes, table_of


def shard(data: bytes, first: int, stop: int) -> bytes:
    footer = footer_of(data)
    start, end = data_span(footer, first, stop)
    return MAGIC + data[start:end] + shard_footer(footer, first, stop, source="in.parquet")


def joined(files: list[bytes]) -> bytes:
    footers = [footer_of(f) for f in files]
    body = b"".join(f[slice(*data_span(footer))] for f, footer in zip(files, footers, strict=True))
    return MAGIC + body + joined_footer(footers, [f"part-{i}" for i in range(len(files))])


@settings(deadline=None, max_examples=50)
@given(
    rows=st.integers(1, 500),
    names=column_names(5),
    group=st.integers(1, 200),
    shards=st.integers(1, 8),
    compression=st.sampled_from(["none", "snappy", "zstd"]),
    dictionary=st.booleans(),
    page_index=st.booleans(),
)
def test_shards_read_as_their_row_groups_and_join_back_into_the_table(
    rows, names, group, shards, compression, dictionary, page_index
):
    table = table_of(names, rows)
    data = parquet_bytes(
        table,
        row_group_size=group,
        compression=compression,
        use_dictionary=dictionary,
        write_page_index=page_index,
    )
    footer = footer_of(data)
    runs = row_group_runs(footer, shards)
    assert [first for first, _ in runs] == [0, *(stop for _, stop in runs[:-1])]
    assert runs[-1][1] == len(footer.row_groups) and len(runs) <= shards
    parts = [shard(data, first, stop) for first, stop in runs]
    at = 0
    for part, (first, stop) in zip(parts, runs, strict=True):
        read = pq.ParquetFile(io.BytesIO(part))
        wanted = sum(footer.row_groups[i].rows for i in range(first, stop))
        assert read.metadata.num_row_groups == stop - first
        # values compared: a slice of a dictionary column keeps the whole dictionary
        assert read.read().to_pylist() == table.slice(at, wanted).to_pylist()
        assert read.schema_arrow == table.schema
        at += wanted
        for i in range(stop - first):  # statistics travel with their row group
            source_group = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(first + i)
            for j in range(source_group.num_columns):
                assert read.metadata.row_group(i).column(j).statistics == (
                    source_group.column(j).statistics
                )
    whole = pq.ParquetFile(io.BytesIO(joined(parts)))
    assert whole.read().to_pylist() == table.to_pylist()
    assert whole.schema_arrow == pq.ParquetFile(io.BytesIO(data)).schema_arrow
    assert whole.metadata.num_row_groups == len(footer.row_groups)


@settings(deadline=None, max_examples=40)
@given(
    rows=st.integers(0, 300),
    names=column_names(4),
    group=st.integers(1, 400),
    statistics=st.booleans(),
)
def test_the_thrift_writer_gives_back_the_footer_pyarrow_wrote(rows, names, group, statistics):
    table = table_of(names, rows)
    data = parquet_bytes(table, row_group_size=group, write_statistics=statistics)
    length = metadata_length(data[-8:])
    metadata = data[-8 - length : -8]
    assert write_struct(read_struct(metadata)) == metadata


def test_a_pandas_frame_survives_a_split_and_a_join_with_its_index_metadata():
    import pandas as pd

    frame = pd.DataFrame({"plan": pd.Categorical(["a", "b", "c"] * 40), "x": range(120)})
    data = io.BytesIO()
    frame.to_parquet(data, row_group_size=30)
    parts = [shard(data.getvalue(), i, i + 2) for i in (0, 2)]
    assert pd.read_parquet(io.BytesIO(parts[1])).equals(frame.iloc[60:].reset_index(drop=True))
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(joined(parts))), frame)


def test_files_of_other_schemas_are_not_joined_and_the_message_names_the_file():
    one = parquet_bytes(pa.table({"a": [1, 2]}))
    other = parquet_bytes(pa.table({"a": [1.5, 2.5]}))
    with pytest.raises(ParquetError, match="part-1 has other columns or types than part-0"):
        joined([one, other])


def test_column_data_in_another_file_is_refused_naming_the_file():
    footer = footer_of(parquet_bytes(pa.table({"a": [1, 2]})))
    chunk = footer.metadata[4].items[0][1].items[0]
    chunk.set(1, 8, b"elsewhere.parquet")  # ColumnChunk.file_path
    with pytest.raises(ParquetError, match=r"in\.parquet keeps column data in other files"):
        shard_footer(footer, 0, 1, source="in.parquet")
