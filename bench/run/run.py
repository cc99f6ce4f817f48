"""Benchmark: `batchinfer run` against the script a user would write, and the predict limit.

Two cases, each on one generated CSV of about ``--size-mb`` MB (1 GB by default):

- numeric: 10 numeric features, no header, the example model (gradient boosting fitted on
  an array);
- table: a header row, 12 numeric and 3 categorical (text) columns, one of whose values
  hold commas and are quoted, and a scikit-learn Pipeline fitted on a pandas DataFrame
  (one-hot encoding of the categories and scaling of the numbers into a
  HistGradientBoostingClassifier); `batchinfer run --header` gives it the header's names.

For each case, in one run, it times:

- batchinfer: `batchinfer run` with each engine of ``--engines`` (transform: real HTTP model
  servers; processing: Processing-job instances scoring in-process), sharded, all cores;
- script: bench/run/hand_script.py, a ProcessPoolExecutor over byte-range chunks of the
  file, each worker doing pandas.read_csv (with the header's names in the table case) +
  model.predict + writing CSV (what users write instead); both it and `batchinfer run` are
  timed as commands, start-up included;
- limit: model.predict alone on already-parsed data, one process per core predicting at
  the same time (parsing, HTTP and encoding are pure overhead on top of it); measured once
  before the pairs, so load from elsewhere skews it more than the ratios.

The script and the predict limit get the share of the cores for native threads (OpenMP)
that batchinfer gives its model servers, one thread per process here: without it
HistGradientBoosting's threads in every process fight over the cores.

The script and `batchinfer run` with each engine take turns (``--repeat`` rounds, default
3), so a burst of load from elsewhere on a shared machine falls on all of them; after the
first round every output must hold the script's predictions, line by line. It prints each
round's ratios (of throughputs: above 1 is batchinfer faster), the median rows/s and ratios,
with two engines the first's throughput over the second's, and the engine process's peak
memory. Generated inputs and models are kept in bench/.data. Usage:

    .venv/bin/python bench/run/run.py [--case numeric|table|both] [--size-mb 1024]
        [--instances 2] [--engines processing transform] [--repeat 3] [--quick]
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from batchinfer.examples import train_example_model, write_example_csv
from batchinfer.serving.server import native_thread_limits

DATA = Path(__file__).resolve().parents[1] / ".data" / "run"
ROW_BYTES_ESTIMATE = {"numeric": 45, "table": 113}
QUICK_SIZE_MB = 50
NUMBERS = tuple(f"num_{i}" for i in range(12))
CATEGORIES = {
    "channel": ("web", "store", "phone"),
    "plan": ("basic", "plus", "pro", "team", "enterprise", "trial", "edu", "gov"),
    "region": tuple(  # "Salem, OR": quoted in the CSV
        f"{city}, {state}"
        for city in ("Springfield", "Franklin", "Clinton", "Salem", "Madison")
        for state in ("OR", "MA", "IL", "OH", "WI", "VA", "NY", "TX")
    ),
}


@dataclass(frozen=True)
class Case:
    name: str
    model_dir: Path
    data: Path
    rows: int
    header: bool


def table_rows(seed: int, rows: int) -> tuple[pa.Table, np.ndarray]:
    """``rows`` records of the table case and their labels: each number on its own scale
    (2 decimals), categories drawn uniformly, the label a noisy linear function of both
    whose coefficients are the same for every seed."""
    shape = np.random.default_rng(0)
    loc, scale = shape.uniform(-100, 1000, len(NUMBERS)), shape.uniform(1, 200, len(NUMBERS))
    weights = shape.standard_normal(len(NUMBERS))
    effects = [shape.standard_normal(len(values)) for values in CATEGORIES.values()]
    draw = np.random.default_rng(seed)
    z = draw.standard_normal((rows, len(NUMBERS)))
    codes = [draw.integers(len(values), size=rows) for values in CATEGORIES.values()]
    logit = z @ weights + sum(e[c] for e, c in zip(effects, codes, strict=True))
    columns: dict[str, Any] = {}
    for i, name in enumerate(NUMBERS):
        columns[name] = np.round(loc[i] + scale[i] * z[:, i], 2)
    for (name, values), code in zip(CATEGORIES.items(), codes, strict=True):
        columns[name] = pa.array(values).take(pa.array(code))
    labels = (logit + draw.standard_normal(rows) > 0).astype(np.int64)
    return pa.table(columns), labels


def write_table_csv(path: Path, rows: int, chunk_rows: int = 1_000_000) -> None:
    """The table case's input: a header row, then ``rows`` records written in chunks."""
    options = pacsv.WriteOptions(include_header=False, quoting_style="needed")
    with path.open("wb") as out:
        out.write((",".join([*NUMBERS, *CATEGORIES]) + "\n").encode())
        for seed, start in enumerate(range(0, rows, chunk_rows), start=1):
            pacsv.write_csv(table_rows(seed, min(chunk_rows, rows - start))[0], out, options)


def train_table_model(model_dir: Path, rows: int = 20_000) -> None:
    """The table case's Pipeline, fitted on a DataFrame, saved as ``model_dir/model.joblib``."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    table, labels = table_rows(0, rows)
    encode = OneHotEncoder(handle_unknown="ignore", sparse_output=False)  # dense for the booster
    columns = ColumnTransformer(
        [("categories", encode, list(CATEGORIES)), ("numbers", StandardScaler(), list(NUMBERS))]
    )
    model = make_pipeline(columns, HistGradientBoostingClassifier(max_iter=50, random_state=0))
    model.fit(table.to_pandas(), labels)
    model_dir.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, model_dir / "model.joblib")


def prepare(name: str, size_mb: int) -> Case:
    """The case's model and an input of about ``size_mb`` MB (kept between runs)."""
    header = name == "table"
    model_dir = DATA / ("table-model" if header else "model")
    if not (model_dir / "model.joblib").exists():
        (train_table_model if header else train_example_model)(model_dir)
    data = DATA / f"{'table' if header else 'input'}-{size_mb}mb" / "data.csv"
    if not data.exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        rows = size_mb * 1_000_000 // ROW_BYTES_ESTIMATE[name]
        (write_table_csv if header else write_example_csv)(data, rows=rows)
    with data.open("rb") as handle:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))
    return Case(name, model_dir, data, lines - header, header)


def run_batchinfer(case: Case, instances: int, engine: str) -> tuple[float, float]:
    """Wall seconds of `batchinfer run --engine ENGINE` and its engine's peak RSS in MiB."""
    out = DATA / f"out-{engine}"
    shutil.rmtree(out, ignore_errors=True)
    command = [
        sys.executable, "-m", "batchinfer", "run", str(case.data), "--model", str(case.model_dir),
        "--output", str(out), "--content-type", "text/csv", "--accept", "text/csv",
        "--split-type", "Line", "--assemble-with", "Line", "--instance-count", str(instances),
        "--shards", "auto", "--merge", "--quiet", "--json", "--engine", engine,
        *(["--header"] if case.header else []),
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"batchinfer run --engine {engine} failed:\n{done.stderr}")
    manifest = json.loads(done.stdout)
    return seconds, manifest["engine_max_rss_mib"]


def run_script(case: Case, cores: int) -> float:
    """Wall seconds of the hand-written script, run as a command like `batchinfer run` is."""
    out = DATA / "out-script"
    shutil.rmtree(out, ignore_errors=True)
    script = Path(__file__).with_name("hand_script.py")
    command = [sys.executable, str(script), str(case.data), str(case.model_dir / "model.joblib")]
    options = [str(out), f"--workers={cores}", *(["--header"] if case.header else [])]
    env = {**os.environ, **native_thread_limits(cores, os.environ)}
    started = time.perf_counter()
    subprocess.run([*command, *options], check=True, env=env)
    return time.perf_counter() - started


def check_same_predictions(rows: int, engine: str) -> None:
    """Stop unless the engine's output and the script's hold the same ``rows`` predictions."""
    ours = b"".join(p.read_bytes() for p in sorted((DATA / f"out-{engine}").glob("*.out")))
    script = b"".join(p.read_bytes() for p in sorted((DATA / "out-script").glob("part-*.csv")))
    ours_lines, script_lines = ours.splitlines(), script.splitlines()
    if ours_lines != script_lines or len(ours_lines) != rows:
        first = next(
            (
                i
                for i, (a, b) in enumerate(zip(ours_lines, script_lines, strict=False), start=1)
                if a != b
            ),
            None,
        )
        raise SystemExit(
            f"outputs differ: {engine} engine {len(ours_lines):,} lines, script "
            f"{len(script_lines):,}, input {rows:,} records; first different line: {first}"
        )


def _predict_rate(
    model_path: str, data: str, rows: int, header: bool, start: Any, rates: Any
) -> None:
    """One core's predict rate on its own parsed sample, timed while every core predicts."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # one process per core: one thread each, as the script and servers
    model = joblib.load(model_path)
    frame = pd.read_csv(data, header=0 if header else None, nrows=rows)
    features = frame if header else frame.to_numpy(dtype=np.float64)
    start.wait()
    started = time.perf_counter()
    model.predict(features)
    rates.put(len(features) / (time.perf_counter() - started))


def predict_limit(case: Case, cores: int, sample_rows: int) -> float:
    """Rows/s of predict alone on already-parsed data, one process per core predicting at
    the same time (parsing and loading happen before the timed part)."""
    context = multiprocessing.get_context("spawn")
    start, rates = context.Barrier(cores), context.Queue()
    args = (str(case.model_dir / "model.joblib"), str(case.data), sample_rows, case.header)
    workers = [
        context.Process(target=_predict_rate, args=(*args, start, rates)) for _ in range(cores)
    ]
    for worker in workers:
        worker.start()
    total = sum(rates.get() for _ in workers)
    for worker in workers:
        worker.join()
    return total


def measure(case: Case, instances: int, engines: list[str], repeat: int, cores: int) -> float:
    """Print the case's rounds and medians; return the first engine's median ratio
    batchinfer / script."""
    size_mb = case.data.stat().st_size / 1e6
    print(f"\n{case.name}: {case.data} ({size_mb:,.0f} MB, {case.rows:,} rows), {cores} cores")
    limit = predict_limit(case, cores, sample_rows=min(500_000, case.rows // 4))
    script_runs: list[float] = []
    runs: dict[str, list[float]] = {engine: [] for engine in engines}
    peaks: dict[str, list[float]] = {engine: [] for engine in engines}
    for turn in range(1, repeat + 1):
        script_runs.append(run_script(case, cores))
        for engine in engines:
            seconds, rss = run_batchinfer(case, instances, engine)
            runs[engine].append(seconds)
            peaks[engine].append(rss)
            if turn == 1:
                check_same_predictions(case.rows, engine)
        ratios = ", ".join(f"{e} {runs[e][-1]:.2f} s ratio {script_runs[-1] / runs[e][-1]:.2f}"
                           for e in engines)  # fmt: skip
        print(f"round {turn}: script {script_runs[-1]:.2f} s; {ratios}")
    script_s = statistics.median(script_runs)
    script = case.rows / script_s
    print(f"medians of {repeat} rounds (outputs checked equal):")
    print(f"hand script          {script_s:8.2f} s  {script:12,.0f} rows/s")
    print(f"predict limit                    {limit:12,.0f} rows/s  ({cores} cores)")
    for engine in engines:
        seconds, rss = statistics.median(runs[engine]), max(peaks[engine])
        ours = case.rows / seconds
        print(f"batchinfer {engine:<10}{seconds:8.2f} s  {ours:12,.0f} rows/s  "
              f"/ script {ours / script:.2f} (target >= 1.0)  / limit {ours / limit:.2f}  "
              f"engine peak RSS {rss:.0f} MiB (target < 300)")  # fmt: skip
    if len(engines) == 2:
        first, second = engines
        each = [b / a for a, b in zip(runs[first], runs[second], strict=True)]
        print(
            f"ratio {first} / {second} (throughput): rounds "
            + ", ".join(f"{r:.2f}" for r in each)
            + f"; medians {statistics.median(runs[second]) / statistics.median(runs[first]):.2f}"
        )
    return script_s / statistics.median(runs[engines[0]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("numeric", "table", "both"), default="both")
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--instances", type=int, default=2)
    parser.add_argument(
        "--engines", nargs="+", choices=("transform", "processing"), default=["transform"]
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds of script and engines")
    quick = f"--size-mb {QUICK_SIZE_MB} --repeat 1"
    parser.add_argument("--quick", action="store_true", help=quick)
    args = parser.parse_args()
    size_mb, repeat = (QUICK_SIZE_MB, 1) if args.quick else (args.size_mb, args.repeat)
    cores = os.cpu_count() or 1
    names = ("numeric", "table") if args.case == "both" else (args.case,)
    ratios = {
        name: measure(prepare(name, size_mb), args.instances, args.engines, repeat, cores)
        for name in names
    }
    print(
        f"\nratio batchinfer ({args.engines[0]}) / script: "
        + ", ".join(f"{n} {r:.2f}" for n, r in ratios.items())
    )


if __name__ == "__main__":
    main()
