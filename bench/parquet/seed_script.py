"""The script a user writes instead of `batchinfer run` for Parquet: a ProcessPoolExecutor
over the input files, each worker doing pandas.read_parquet + model.predict + to_parquet of
the frame with its prediction column.

    python bench/parquet/seed_script.py INPUT_DIR MODEL.joblib OUTPUT_DIR [--workers N]
"""

import argparse
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import joblib
import pandas as pd


def score_file(model_path: str, source: str, out: str) -> None:
    model = joblib.load(model_path)
    frame = pd.read_parquet(source)
    frame.assign(prediction=model.predict(frame)).to_parquet(out, index=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    files = sorted(args.input.glob("*.parquet"))
    with ProcessPoolExecutor(args.workers) as pool:
        done = [
            pool.submit(score_file, str(args.model), str(f), str(args.output / f"{f.name}.out"))
            for f in files
        ]
        for future in done:
            future.result()


if __name__ == "__main__":
    main()
