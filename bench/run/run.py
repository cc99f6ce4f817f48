"""Benchmark: `batchinfer run` against the script a user would write, and the predict limit.

On one generated CSV (10 numeric features, ~1 GB by default) with the example model, in one
run, it times:

- batchinfer: the local engine (real HTTP model servers), sharded, all cores;
- script: bench/run/hand_script.py, a ProcessPoolExecutor over byte-range chunks of the
  file, each worker doing pandas.read_csv + model.predict + writing CSV (what users write
  instead); both it and `batchinfer run` are timed as commands, start-up included;
- limit: model.predict alone on already-parsed arrays, one process per core predicting at
  the same time (parsing, HTTP and encoding are pure overhead on top of it).

The script and `batchinfer run` take turns (``--repeat`` pairs, default 3), so a burst of
load from elsewhere on a shared machine falls on both; it prints each pair's ratio, the
median rows/s and ratios, and the engine process's peak memory. Usage:

    .venv/bin/python bench/run/run.py [--size-mb 1024] [--instances 2] [--repeat 3]
"""

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd

from batchinfer.examples import train_example_model, write_example_csv

DATA = Path(__file__).resolve().parents[1] / ".data" / "run"
ROW_BYTES_ESTIMATE = 45


def prepare(size_mb: int) -> tuple[Path, Path, int]:
    """The model and an input of about ``size_mb`` MB (kept between runs)."""
    model_dir = DATA / "model"
    if not (model_dir / "model.joblib").exists():
        train_example_model(model_dir)
    data = DATA / f"input-{size_mb}mb" / "data.csv"
    if not data.exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        write_example_csv(data, rows=size_mb * 1_000_000 // ROW_BYTES_ESTIMATE)
    with data.open("rb") as handle:
        rows = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))
    return model_dir, data, rows


def run_batchinfer(model_dir: Path, data: Path, instances: int) -> tuple[float, float]:
    """Wall seconds of `batchinfer run` and its engine's peak RSS in MiB."""
    out = DATA / "out-batchinfer"
    shutil.rmtree(out, ignore_errors=True)
    command = [
        sys.executable, "-m", "batchinfer", "run", str(data), "--model", str(model_dir),
        "--output", str(out), "--content-type", "text/csv", "--accept", "text/csv",
        "--split-type", "Line", "--assemble-with", "Line", "--instance-count", str(instances),
        "--shards", "auto", "--merge", "--quiet", "--json",
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"batchinfer run failed:\n{done.stderr}")
    manifest = json.loads(done.stdout)
    return seconds, manifest["engine_max_rss_mib"]


def run_script(model_dir: Path, data: Path, cores: int) -> float:
    """Wall seconds of the hand-written script, run as a command like `batchinfer run` is."""
    out = DATA / "out-script"
    shutil.rmtree(out, ignore_errors=True)
    script = Path(__file__).with_name("hand_script.py")
    command = [sys.executable, str(script), str(data), str(model_dir / "model.joblib"), str(out)]
    started = time.perf_counter()
    subprocess.run([*command, f"--workers={cores}"], check=True)
    return time.perf_counter() - started


def _predict_rate(model_path: str, data: str, rows: int, start: Any, rates: Any) -> None:
    """One core's predict rate on its own parsed sample, timed while every core predicts."""
    model = joblib.load(model_path)
    features = pd.read_csv(data, header=None, nrows=rows).to_numpy(dtype=np.float64)
    start.wait()
    started = time.perf_counter()
    model.predict(features)
    rates.put(len(features) / (time.perf_counter() - started))


def predict_limit(model_dir: Path, data: Path, cores: int, sample_rows: int = 500_000) -> float:
    """Rows/s of predict alone on already-parsed arrays, one process per core predicting at
    the same time (parsing and loading happen before the timed part)."""
    context = multiprocessing.get_context("spawn")
    start, rates = context.Barrier(cores), context.Queue()
    args = (str(model_dir / "model.joblib"), str(data), sample_rows, start, rates)
    workers = [context.Process(target=_predict_rate, args=args) for _ in range(cores)]
    for worker in workers:
        worker.start()
    total = sum(rates.get() for _ in workers)
    for worker in workers:
        worker.join()
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--instances", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="script/batchinfer pairs")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    model_dir, data, rows = prepare(args.size_mb)
    print(f"input: {data} ({data.stat().st_size / 1e6:,.0f} MB, {rows:,} rows), {cores} cores")

    limit = predict_limit(model_dir, data, cores)
    script_runs, our_runs, peaks = [], [], []
    for turn in range(1, args.repeat + 1):
        script_runs.append(run_script(model_dir, data, cores))
        seconds, rss = run_batchinfer(model_dir, data, args.instances)
        our_runs.append(seconds)
        peaks.append(rss)
        print(f"pair {turn}: script {script_runs[-1]:.2f} s, batchinfer {seconds:.2f} s, "
              f"ratio {script_runs[-1] / seconds:.2f}")  # fmt: skip
    script_s, ours_s, rss = statistics.median(script_runs), statistics.median(our_runs), max(peaks)
    ours, script = rows / ours_s, rows / script_s
    print(f"medians of {args.repeat} pairs:")
    print(f"batchinfer run   {ours_s:8.2f} s  {ours:12,.0f} rows/s  engine peak RSS {rss:.0f} MiB")
    print(f"hand script      {script_s:8.2f} s  {script:12,.0f} rows/s")
    print(f"predict limit                {limit:12,.0f} rows/s  ({cores} cores)")
    print(f"ratio batchinfer / script = {ours / script:.2f}  (target >= 1.0)")
    print(f"ratio batchinfer / limit  = {ours / limit:.2f}  (target >= 0.6)")
    print(f"engine peak memory        = {rss:.0f} MiB  (target < 300)")


if __name__ == "__main__":
    main()
