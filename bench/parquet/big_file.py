"""Demonstration: one large Parquet file split into shards of row groups and scored by
several local instances, its answers merged into one Parquet file.

The input: one Parquet file of about ``--size-mb`` MB (2 GB by default) of the table case of
bench/run/run.py (12 numeric and 3 categorical columns), written a row group of
``--group-rows`` rows at a time; the model: its scikit-learn Pipeline. The script prints
`batchinfer plan`'s shard plan, then runs

    batchinfer run FILE --content-type application/x-parquet --join-source Input
        --instance-count 4 --shards auto --merge --max-payload-mb 100

and prints its time, shards, instances and engine peak memory. It then reads the input and
the merged output side by side, a batch of rows at a time: every row's input columns must
be equal, the row counts equal, and, for every ``--check-every``-th batch, the prediction
column equal to the Pipeline's prediction of that batch. Usage:

    .venv/bin/python bench/parquet/big_file.py [--size-mb 2048] [--instances 4] [--quick]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import joblib
import pandas as pd
import pyarrow.parquet as pq
from run import DATA, table_case  # bench/parquet/run.py

CHECK_ROWS = 200_000


def prepare(size_mb: int, group_rows: int) -> tuple[Path, Path]:
    """The model and the input file (kept between runs)."""
    case = table_case()
    model_dir = DATA / "model"
    if not (model_dir / "model.joblib").exists():
        case.train_table_model(model_dir)
    source = DATA / f"big-{size_mb}mb-{group_rows}.parquet"
    if not source.exists():
        partial = source.with_suffix(".partial")
        table, _labels = case.table_rows(1, group_rows)
        with pq.ParquetWriter(partial, table.schema) as writer:
            for number in range(2, 1_000_000):
                writer.write_table(table, row_group_size=group_rows)
                if partial.stat().st_size >= size_mb * 1_000_000:
                    break
                table, _labels = case.table_rows(number, group_rows)
        partial.replace(source)
    return model_dir, source


def batchinfer(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "batchinfer", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env={**os.environ, "COLUMNS": "160"})  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"batchinfer {arguments[0]} failed:\n{done.stdout}\n{done.stderr}")
    return done


def check(source: Path, output: Path, model_path: Path, every: int) -> tuple[int, int]:
    """Rows compared, and rows whose prediction was recomputed and compared."""
    model = joblib.load(model_path)
    inputs = pq.ParquetFile(source).iter_batches(batch_size=CHECK_ROWS)
    outputs = pq.ParquetFile(output).iter_batches(batch_size=CHECK_ROWS)
    rows = predicted = 0
    for number, (given, answered) in enumerate(zip(inputs, outputs, strict=True)):
        frame = given.to_pandas()
        scored = answered.to_pandas()
        pd.testing.assert_frame_equal(scored[list(frame.columns)], frame)
        if number % every == 0:
            expected = pd.Series(model.predict(frame), name="prediction")
            pd.testing.assert_series_equal(scored["prediction"], expected)
            predicted += len(frame)
        rows += len(frame)
    return rows, predicted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=2048)
    parser.add_argument("--group-rows", type=int, default=1_000_000)
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--max-payload-mb", type=int, default=100)
    parser.add_argument("--check-every", type=int, default=10)
    quick = "--size-mb 128 --group-rows 100000 --max-payload-mb 24"
    parser.add_argument("--quick", action="store_true", help=quick)
    args = parser.parse_args()
    if args.quick:  # shards enough for every instance, as 2 GB in 100 MB requests has
        args.size_mb, args.group_rows, args.max_payload_mb = 128, 100_000, 24
    model_dir, source = prepare(args.size_mb, args.group_rows)
    metadata = pq.ParquetFile(source).metadata
    print(
        f"{source.name}: {source.stat().st_size / 1e6:,.0f} MB, {metadata.num_rows:,} rows in "
        f"{metadata.num_row_groups} row groups, {os.cpu_count()} cores"
    )
    shape = ["--content-type", "application/x-parquet", "--instance-count", str(args.instances),
             "--shards", "auto", "--max-payload-mb", str(args.max_payload_mb)]  # fmt: skip
    print(batchinfer("plan", str(source), *shape).stdout)
    out = DATA / "out-big"
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    done = batchinfer("run", str(source), "--model", str(model_dir), "--output", str(out),
                      "--join-source", "Input", "--merge", "--quiet", "--json", *shape)  # fmt: skip
    seconds = time.perf_counter() - started
    summary = json.loads(done.stdout)
    (scored,) = summary["files"]
    print(
        f"batchinfer run: {seconds:.1f} s, {metadata.num_rows / seconds:,.0f} rows/s, "
        f"{scored['shards']} shards on instances {scored['instances']}, records in/out "
        f"{scored['records_in']:,}/{scored['records_out']:,}, engine peak RSS "
        f"{summary['engine_max_rss_mib']:.0f} MiB"
    )
    output = out / f"{source.name}.out"
    merged = pq.ParquetFile(output).metadata
    size = output.stat().st_size / 1e6
    print(f"merged output: {size:,.0f} MB, {merged.num_row_groups} row groups")
    rows, predicted = check(source, output, model_dir / "model.joblib", args.check_every)
    print(f"checked: {rows:,} rows equal, {predicted:,} predictions recomputed and equal")


if __name__ == "__main__":
    main()
