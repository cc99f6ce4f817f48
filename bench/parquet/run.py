"""Benchmark: `batchinfer run` on Parquet against the script a user would write.

The input: ``--files`` Parquet files of about ``--size-mb`` MB in all (1 GB by default), of
the table case of bench/run/run.py (12 numeric and 3 categorical columns), scored by its
scikit-learn Pipeline fitted on a DataFrame. Both sides write, per input file, a Parquet
file of the input's columns and the prediction column:

- script: bench/parquet/seed_script.py, a ProcessPoolExecutor over the files, each worker
  doing pandas.read_parquet + model.predict + to_parquet (what users write instead);
- batchinfer: `batchinfer run --content-type application/x-parquet --join-source Input`
  with the processing engine and with the transform engine (real HTTP model servers), each
  file one request (``--max-payload-mb 0``: no limit, locally).

They take turns (``--repeat`` rounds of script, processing, transform), timed as commands,
start-up included; after the first round the three outputs must hold the same frames. It
prints each round's ratios (script seconds over batchinfer's: above 1 is batchinfer
faster), the medians, and the engine process's peak memory (target < 500 MiB). Generated
inputs and the model are kept in bench/.data. Usage:

    .venv/bin/python bench/parquet/run.py [--size-mb 1024] [--files 16] [--repeat 3] [--quick]
"""

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from batchinfer.serving.server import native_thread_limits

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[0] / ".data" / "parquet"
ROW_BYTES_ESTIMATE = 28  # the table case's rows, as Parquet (snappy) writes them (measured)
QUICK_SIZE_MB, QUICK_FILES = 40, 4
ENGINES = ("processing", "transform")


def table_case():  # bench/run/run.py's generator and model, loaded by path
    spec = importlib.util.spec_from_file_location("table_case", HERE.parent / "run" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(size_mb: int, files: int) -> tuple[Path, Path, int]:
    """The model and the input folder of ``files`` Parquet files (kept between runs), and
    the rows they hold."""
    case = table_case()
    model_dir = DATA / "model"
    if not (model_dir / "model.joblib").exists():
        case.train_table_model(model_dir)
    folder = DATA / f"input-{size_mb}mb-{files}"
    if not folder.exists():
        folder.mkdir(parents=True)
        rows = size_mb * 1_000_000 // ROW_BYTES_ESTIMATE // files
        for number in range(files):
            table, _labels = case.table_rows(number + 1, rows)
            pq.write_table(table, folder / f"part-{number:03d}.parquet")
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob("*.parquet"))
    return model_dir, folder, rows


def run_script(model_dir: Path, folder: Path, cores: int) -> float:
    out = DATA / "out-script"
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, str(HERE / "seed_script.py"), str(folder),
               str(model_dir / "model.joblib"), str(out), f"--workers={cores}"]  # fmt: skip
    env = {**os.environ, **native_thread_limits(cores, os.environ)}
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    return time.perf_counter() - started


def run_batchinfer(model_dir: Path, folder: Path, engine: str) -> tuple[float, float]:
    """Wall seconds of `batchinfer run` and its engine's peak RSS in MiB."""
    out = DATA / f"out-{engine}"
    shutil.rmtree(out, ignore_errors=True)
    command = [
        sys.executable, "-m", "batchinfer", "run", str(folder), "--model", str(model_dir),
        "--output", str(out), "--engine", engine, "--content-type", "application/x-parquet",
        "--join-source", "Input", "--max-payload-mb", "0", "--quiet", "--json",
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"batchinfer run --engine {engine} failed:\n{done.stderr}")
    return seconds, json.loads(done.stdout)["engine_max_rss_mib"]


def check_same_outputs(folder: Path) -> None:
    """Stop unless every engine's output holds the script's frame, file for file."""
    for source in sorted(folder.glob("*.parquet")):
        expected = pd.read_parquet(DATA / "out-script" / f"{source.name}.out")
        for engine in ENGINES:
            written = pd.read_parquet(DATA / f"out-{engine}" / f"{source.name}.out")
            pd.testing.assert_frame_equal(written, expected, check_dtype=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the three")
    quick = f"--size-mb {QUICK_SIZE_MB} --files {QUICK_FILES} --repeat 1"
    parser.add_argument("--quick", action="store_true", help=quick)
    args = parser.parse_args()
    size_mb, files, repeat = (
        (QUICK_SIZE_MB, QUICK_FILES, 1) if args.quick else (args.size_mb, args.files, args.repeat)
    )
    cores = os.cpu_count() or 1
    model_dir, folder, rows = prepare(size_mb, files)
    size = sum(f.stat().st_size for f in folder.glob("*.parquet")) / 1e6
    print(f"{files} Parquet files, {size:,.0f} MB, {rows:,} rows, {cores} cores")
    script_runs: list[float] = []
    ours: dict[str, list[float]] = {engine: [] for engine in ENGINES}
    peaks: dict[str, list[float]] = {engine: [] for engine in ENGINES}
    for turn in range(1, repeat + 1):
        script_runs.append(run_script(model_dir, folder, cores))
        for engine in ENGINES:
            seconds, rss = run_batchinfer(model_dir, folder, engine)
            ours[engine].append(seconds)
            peaks[engine].append(rss)
        if turn == 1:
            check_same_outputs(folder)
        ratios = ", ".join(f"{e} {script_runs[-1] / ours[e][-1]:.2f}" for e in ENGINES)
        print(f"round {turn}: script {script_runs[-1]:.2f} s; ratio script / batchinfer: {ratios}")
    script_s = statistics.median(script_runs)
    print(f"medians of {repeat} rounds (outputs checked equal):")
    print(f"seed script           {script_s:8.2f} s  {rows / script_s:12,.0f} rows/s")
    for engine in ENGINES:
        seconds = statistics.median(ours[engine])
        print(
            f"batchinfer {engine:<10} {seconds:8.2f} s  {rows / seconds:12,.0f} rows/s  "
            f"ratio {script_s / seconds:.2f} (target >= 1.0)  engine peak RSS "
            f"{max(peaks[engine]):.0f} MiB (target < 500)"
        )


if __name__ == "__main__":
    main()
