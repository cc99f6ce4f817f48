"""Benchmark: the model server's throughput on MultiRecord 6 MB CSV payloads.

With the example model (a 100-tree gradient-boosted classifier, 10 numeric features), in one
run, it measures rows/s of:

- predict-only: ``model.predict`` in this process on already-parsed arrays (the compute
  limit: parsing, HTTP and encoding are pure overhead on top of it); the example model
  predicts on one core, so the limit of n workers is n times it;
- batchinfer: ``batchinfer serve`` (real gunicorn over localhost) with its Arrow codecs;
- genfromtxt: the same server running an ``inference.py`` whose ``input_fn``/``output_fn`` are
  the codecs of SageMaker's scikit-learn container defaults (``numpy.genfromtxt`` to decode,
  ``numpy.savetxt(fmt="%s")`` to encode);

first with 1 worker and 1 client, then with one worker per core and as many clients.
Every response is checked to hold one line per input record. It prints rows/s and ratios.
Usage:

    .venv/bin/python bench/serve/run.py [--seconds 10] [--payloads 6] [--quick]
"""

import argparse
import http.client
import shutil
import threading
import time
from pathlib import Path

import joblib

from batchinfer.examples import train_example_model, write_example_csv
from batchinfer.serving.codecs import decode_csv
from batchinfer.serving.launcher import start_server
from batchinfer.serving.server import cpu_count

DATA = Path(__file__).resolve().parents[1] / ".data" / "serve"
PAYLOAD_BYTES = 6 * 1024 * 1024
GENFROMTXT_MODULE = '''"""The default codecs of SageMaker's scikit-learn container."""
import io

import numpy as np


def input_fn(body, content_type):
    return np.genfromtxt(io.StringIO(body), dtype=np.float64, delimiter=",")


def output_fn(prediction, accept):
    stream = io.StringIO()
    np.savetxt(stream, prediction, delimiter=",", fmt="%s")
    return stream.getvalue()
'''


def prepare(payload_count: int) -> tuple[Path, Path, list[bytes]]:
    """The example model, a copy of it with the genfromtxt module, and the payloads."""
    model_dir, baseline_dir = DATA / "model", DATA / "model-genfromtxt"
    if not (model_dir / "model.joblib").exists():
        train_example_model(model_dir)
    shutil.rmtree(baseline_dir, ignore_errors=True)
    (baseline_dir / "code").mkdir(parents=True)
    shutil.copy(model_dir / "model.joblib", baseline_dir)
    (baseline_dir / "code" / "inference.py").write_text(GENFROMTXT_MODULE)
    data = DATA / f"payloads-{payload_count}.csv"
    if not data.exists():
        write_example_csv(data, rows=payload_count * PAYLOAD_BYTES // 40)
    blob, payloads, start = data.read_bytes(), [], 0
    while len(payloads) < payload_count:
        end = blob.rfind(b"\n", start, start + PAYLOAD_BYTES) + 1
        payloads.append(blob[start:end])
        start = end
    return model_dir, baseline_dir, payloads


def predict_only(model_dir: Path, payloads: list[bytes], seconds: float) -> float:
    """rows/s of model.predict on already-parsed arrays, in this process."""
    model = joblib.load(model_dir / "model.joblib")
    arrays = [decode_csv(payload) for payload in payloads]
    rows, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for array in arrays:
            rows += len(model.predict(array))
    return rows / (time.perf_counter() - started)


def _client(port: int, payloads: list[bytes], deadline: float, counts: list[int]) -> None:
    while time.perf_counter() < deadline:
        for payload in payloads:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            connection.request(
                "POST",
                "/invocations",
                payload,
                {"Content-Type": "text/csv", "Accept": "text/csv"},
            )
            response = connection.getresponse()
            body = response.read()
            connection.close()
            if response.status != 200:
                raise RuntimeError(f"server answered {response.status}: {body[:300]!r}")
            records, lines = payload.count(b"\n"), body.count(b"\n")
            if lines != records:
                raise RuntimeError(f"{lines} output lines for {records} records")
            counts.append(records)
            if time.perf_counter() >= deadline:
                return


def serve_rate(model_dir: Path, payloads: list[bytes], workers: int, seconds: float) -> float:
    """rows/s of a server with ``workers`` workers driven by as many clients."""
    with start_server(model_dir, workers=workers) as server:
        server.wait_healthy(60)
        counts: list[int] = []
        _client(server.port, payloads[:1], 0.0, counts)  # one warm-up request
        counts.clear()
        started = time.perf_counter()
        clients = [
            threading.Thread(
                target=_client,
                args=(server.port, payloads[i:] + payloads[:i], started + seconds, counts),
            )
            for i in range(workers)
        ]
        for client in clients:
            client.start()
        for client in clients:
            client.join()
        return sum(counts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per measurement")
    parser.add_argument("--payloads", type=int, default=6, help="distinct 6 MiB payloads")
    parser.add_argument("--quick", action="store_true", help="--seconds 2 --payloads 2")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.payloads = 2.0, 2
    model_dir, baseline_dir, payloads = prepare(args.payloads)
    rows = sum(payload.count(b"\n") for payload in payloads) / len(payloads)
    print(f"{len(payloads)} payloads of {PAYLOAD_BYTES:,} bytes max, {rows:,.0f} rows each")
    for workers in sorted({1, cpu_count()}):
        # Measured next to each server run: the machine's load may change between runs.
        limit = predict_only(model_dir, payloads, args.seconds)
        ours = serve_rate(model_dir, payloads, workers, args.seconds)
        baseline = serve_rate(baseline_dir, payloads, workers, args.seconds)
        print(f"{workers} worker(s), {workers} client(s):")
        print(f"  predict-only (in-process, parsed)     {limit:12,.0f} rows/s")
        print(f"  batchinfer serve                      {ours:12,.0f} rows/s")
        print(f"  genfromtxt/savetxt server             {baseline:12,.0f} rows/s")
        # The example model predicts on one core: the limit of n workers is n x one core's.
        print(f"  batchinfer / (predict-only x {workers})       {ours / (limit * workers):12.2f} x")
        print(f"  batchinfer / genfromtxt server        {ours / baseline:12.2f} x")


if __name__ == "__main__":
    main()
