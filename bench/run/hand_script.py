"""The script a user writes instead of `batchinfer run`: a ProcessPoolExecutor over 64 MB
byte-range chunks of one CSV, each worker doing pandas.read_csv + model.predict + to_csv.

    python bench/run/hand_script.py INPUT.csv MODEL.joblib OUTPUT_DIR [--workers N]
"""

import argparse
import io
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import joblib
import pandas as pd

CHUNK = 64 << 20


def chunk_bounds(path: Path, parts: int) -> list[tuple[int, int]]:
    size = path.stat().st_size
    bounds, start = [], 0
    with path.open("rb") as handle:
        for i in range(1, parts + 1):
            end = size if i == parts else size * i // parts
            if end < size:
                handle.seek(end)
                handle.readline()
                end = handle.tell()
            bounds.append((start, end))
            start = end
    return bounds


def predict_chunk(model_path: str, path: str, start: int, end: int, out: str) -> None:
    model = joblib.load(model_path)
    with open(path, "rb") as handle:
        handle.seek(start)
        frame = pd.read_csv(io.BytesIO(handle.read(end - start)), header=None)
    pd.DataFrame(model.predict(frame.to_numpy())).to_csv(out, header=False, index=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    bounds = chunk_bounds(args.input, max(args.workers, args.input.stat().st_size // CHUNK))
    with ProcessPoolExecutor(args.workers) as pool:
        jobs = [
            pool.submit(
                predict_chunk,
                str(args.model),
                str(args.input),
                start,
                end,
                str(args.output / f"part-{i:05d}.csv"),
            )
            for i, (start, end) in enumerate(bounds)
        ]
        for job in jobs:
            job.result()


if __name__ == "__main__":
    main()
