"""Parquet tables of every kind of column a data lake holds, written to bytes."""

import io

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

COLUMNS = {
    "int": lambda n: pa.array(range(n)),
    "float": lambda n: pa.array([i / 7 if i % 5 else None for i in range(n)]),
    "text": lambda n: pa.array([f"city-{i % 13}" for i in range(n)]),
    "category": lambda n: pa.array([f"c{i % 3}" for i in range(n)]).dictionary_encode(),
    "flag": lambda n: pa.array([i % 2 == 0 for i in range(n)]),
    "nested": lambda n: pa.array([{"x": i, "y": [i, i + 1]} for i in range(n)]),
    "list": lambda n: pa.array([[float(i)] * (i % 3) for i in range(n)]),
    "when": lambda n: pa.array(range(n), pa.timestamp("ms")),
}


def parquet_bytes(table: pa.Table, **options: object) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)
    return sink.getvalue()


def column_names(max_size: int) -> st.SearchStrategy[list[str]]:
    """A few of :data:`COLUMNS`, each at most once."""
    return st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, max_size=max_size, unique=True)


def table_of(names: list[str], rows: int) -> pa.Table:
    return pa.table({name: COLUMNS[name](rows) for name in names})
