"""Benchmark: what one 6 MB CSV request costs besides the model, and the ratios that leaves.

On one thread (each worker's share of the cores when every core has a worker), with the
heap settings of a model server's worker and the example model (10 numeric features), it
times on the same request, in rounds that each start one step later:

- batchinfer's decode (``decode_csv``: Arrow's parse, the row-major array, the checks) and
  encode (``encode_csv``) of the answer;
- the model's ``predict`` on the parsed array;
- the hand script's steps (``bench/run/hand_script.py``): ``pandas.read_csv`` and
  ``to_csv``;
- other CSV readers, each into a row-major array as ``decode_csv`` gives, for what a
  faster decoder could give: Arrow's parse alone (``decode_csv``'s, without its checks),
  ``numpy.loadtxt``, and polars and DuckDB where they are installed (they are not
  batchinfer's dependencies).

It prints each one's median, and what these steps alone leave a run:

- predict / (predict + decode + encode): about the most of the predict limit a run can
  reach (``bench/run/run.py``'s "/ limit"), and a server of in-process predict, as if it
  started in no time and moved no bytes (an estimate: each step runs here alone, and every
  step is slower with all cores busy);
- (read_csv + predict + to_csv) / (decode + predict + encode): how far a run is ahead of
  the hand script (its "/ script") at a size where both starts are negligible, counting
  only these steps on both sides (the script's own pool and files come on top).

Usage:

    .venv/bin/python bench/decode/run.py [--rounds 16] [--quick]
"""

import argparse
import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
from threadpoolctl import threadpool_limits

from batchinfer.examples import train_example_model, write_example_csv
from batchinfer.heap_reuse import reuse_freed_memory
from batchinfer.serving.codecs import decode_csv, encode_csv

DATA = Path(__file__).resolve().parents[1] / ".data" / "decode"
REQUEST_BYTES = 6 * 1024 * 1024
FIELDS = 10


def prepare() -> tuple[Path, bytes]:
    """The example model and one request of whole records of at most 6 MiB."""
    model_dir, data = DATA / "model", DATA / "request.csv"
    if not (model_dir / "model.joblib").exists():
        train_example_model(model_dir)
    if not data.exists():
        write_example_csv(data, rows=REQUEST_BYTES // 40)
    blob = data.read_bytes()[:REQUEST_BYTES]
    return model_dir / "model.joblib", blob[: blob.rfind(b"\n") + 1]


def readers(body: bytes) -> dict[str, Callable[[], np.ndarray]]:
    """Each CSV reader, returning the request's (records, fields) float64 array."""
    names = [f"f{i}" for i in range(FIELDS)]

    def arrow_parse() -> np.ndarray:  # decode_csv's reader and options, without its checks
        table = pacsv.read_csv(
            pa.BufferReader(body),
            read_options=pacsv.ReadOptions(column_names=names),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.float64())),
        )
        return np.column_stack([column.to_numpy() for column in table.columns])

    found = {
        "batchinfer decode_csv": lambda: decode_csv(body),
        "Arrow read_csv alone": arrow_parse,
        "pandas read_csv (the script)": lambda: np.ascontiguousarray(
            pd.read_csv(io.BytesIO(body), header=None).to_numpy()
        ),
        "numpy loadtxt": lambda: np.loadtxt(io.BytesIO(body), delimiter=","),
    }
    os.environ.setdefault("POLARS_MAX_THREADS", "1")  # read before polars is imported
    try:
        import polars as pl

        schema = dict.fromkeys(names, pl.Float64)
        found[f"polars {pl.__version__}"] = lambda: np.ascontiguousarray(
            pl.read_csv(body, has_header=False, schema=schema).to_numpy()
        )
    except ImportError:
        print("polars: not installed, not timed")
    try:
        import duckdb

        path = DATA / "request-only.csv"  # DuckDB reads CSV from files (this one cached)
        path.write_bytes(body)
        connection = duckdb.connect()
        connection.execute("SET threads = 1")
        columns = ", ".join(f"'{n}': 'DOUBLE'" for n in names)
        query = f"SELECT * FROM read_csv('{path}', header = false, columns = {{{columns}}})"
        found[f"DuckDB {duckdb.__version__}"] = lambda: np.column_stack(
            list(connection.execute(query).fetchnumpy().values())
        )
    except ImportError:
        print("duckdb: not installed, not timed")
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=16, help="rounds of every step")
    parser.add_argument("--quick", action="store_true", help="--rounds 4")
    args = parser.parse_args()
    rounds = 4 if args.quick else args.rounds
    threadpool_limits(1)
    pa.set_cpu_count(1)
    reuse_freed_memory()
    model_path, body = prepare()
    model = joblib.load(model_path)
    matrix = decode_csv(body)
    prediction = model.predict(matrix)
    decoders = readers(body)
    for name, read in decoders.items():  # every reader reads the same numbers
        if not np.array_equal(read(), matrix):
            sys.exit(f"{name} read other numbers than decode_csv")
    steps = decoders | {
        "predict": lambda: model.predict(matrix),
        "batchinfer encode_csv": lambda: encode_csv(prediction),
        "pandas to_csv (the script)": lambda: pd.DataFrame(prediction).to_csv(
            io.StringIO(), header=False, index=False
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    names = list(steps)
    for number in range(rounds):  # each round starts one step later: no step always first
        for name in names[number % len(names) :] + names[: number % len(names)]:
            started = time.perf_counter()
            steps[name]()
            times[name].append(time.perf_counter() - started)
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"one request: {len(body):,} bytes, {len(matrix):,} records of {FIELDS} numbers")
    print(f"{'step':32s} {'median':>10s}  / decode_csv")
    for name, value in median.items():
        ratio = value / median["batchinfer decode_csv"]
        print(f"{name:32s} {value * 1e3:7.1f} ms  {ratio:6.2f}")
    ours = median["batchinfer decode_csv"] + median["batchinfer encode_csv"]
    script = median["pandas read_csv (the script)"] + median["pandas to_csv (the script)"]
    limit = median["predict"] / (median["predict"] + ours)
    ahead = (script + median["predict"]) / (ours + median["predict"])
    print(f"most of run / predict limit:     {limit:.2f}")
    print(f"run / hand script, these steps:  {ahead:.2f}")
    for name in decoders:
        if name == "batchinfer decode_csv":
            continue
        codecs = median[name] + median["batchinfer encode_csv"]
        print(
            f"  with {name} as the decoder: {median['predict'] / (median['predict'] + codecs):.2f}"
            f" of the limit, {(script + median['predict']) / (codecs + median['predict']):.2f}"
            " of the script"
        )


if __name__ == "__main__":
    main()
