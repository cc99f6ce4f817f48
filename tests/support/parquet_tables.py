"""Parquet tables of every kind of column a data lake holds, written to bytes."""

import io

import pyarrow as pa
import pyarrow.parquet as pq

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
