"""The script a user writes instead of `batchinfer run`: a ProcessPoolExecutor over 64 MB
byte-range chunks of one CSV, each worker doing pandas.read_csv + model.predict + to_csv.

With --header the file starts with a header row: it is read once, its names given to each
worker's read_csv, and the model (fitted on a DataFrame) predicts on the DataFrame; without,
the model predicts on the parsed array.

    python bench/run/hand_script.py INPUT.csv MODEL.joblib OUTPUT_DIR [--workers N] [--header]
"""

import argparse
import csv
import io
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import joblib
import pandas as pd

CHUNK = 64 << 20


def chunk_bounds(path: Path, parts: int, start: int = 0) -> list[tuple[int, int]]:
    """``parts`` byte ranges of whole lines from ``start`` to the end of the file."""
    size, first = path.stat().st_size, start
    bounds = []
    with path.open("rb") as handle:
        for i in range(1, parts + 1):
            end = size if i == parts else first + (size - first) * i // parts
            if end < size:
                handle.seek(end)
                handle.readline()
                end = handle.tell()
            bounds.append((start, end))
            start = end
    return bounds


def predict_chunk(
    model_path: str, path: str, start: int, end: int, out: str, names: list[str] | None
) -> None:
    model = joblib.load(model_path)
    with open(path, "rb") as handle:
        handle.seek(start)
        frame = pd.read_csv(io.BytesIO(handle.read(end - start)), header=None, names=names)
    predictions = model.predict(frame if names else frame.to_numpy())
    pd.DataFrame(predictions).to_csv(out, header=False, index=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--header", action="store_true", help="the input starts with names")
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    names, first = None, 0
    if args.header:
        with args.input.open("rb") as handle:
            line = handle.readline()
        names, first = next(csv.reader([line.decode()])), len(line)
    parts = max(args.workers, args.input.stat().st_size // CHUNK)
    with ProcessPoolExecutor(args.workers) as pool:
        jobs = [
            pool.submit(
                predict_chunk,
                str(args.model),
                str(args.input),
                start,
                end,
                str(args.output / f"part-{i:05d}.csv"),
                names,
            )
            for i, (start, end) in enumerate(chunk_bounds(args.input, parts, first))
        ]
        for job in jobs:
            job.result()


if __name__ == "__main__":
    main()
