"""Benchmark: a PyTorch network served by batchinfer against the in-process forward loop.

The model is a multilayer perceptron, 30 -> 256 -> 256 -> 1 with random weights (seeded),
saved as TorchScript (``model.pt``) and exported to ONNX (``model.onnx``); the input is CSV of
30 float features a row. In one run it measures:

1. the in-process forward loop on the decoded array, per forward batch size (64 .. 65,536):
   rows/s with all this machine's cores to PyTorch, and the loop's peak RSS growth once the
   runtime and model are loaded, each batch size in a process of its own (the limit:
   decoding, HTTP and encoding are overhead on top);
   the same for ONNX Runtime at each size;
2. ``batchinfer run`` (transform engine, one instance, one worker per core) on the same rows
   with ``--max-batch-records`` at the loop's best size, over its transform time (decoding,
   HTTP and encoding included, the servers' start-up not), in pairs alternating with the loop
   at that size; the median ratio run / loop (target >= 0.8), outputs checked against the
   loop;
3. the model server workers' peak RSS (VmHWM, polled) at MaxPayloadInMB 1 and 32 with that
   forward batch: flat within 20 % is the target, whatever the request size.

Usage (``--quick`` runs in under a minute; ``--device cuda`` measures the GPU this machine
has, the loop and the servers on it):

    .venv/bin/python bench/torch/run.py [--quick] [--rows N] [--repeat 3] [--device cpu|cuda]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import torch

DATA = Path(__file__).resolve().parents[1] / ".data" / "torch"
FEATURES = 30
BATCHES = tuple(4**n for n in range(3, 9))  # 64, 256, ..., 65,536
QUICK_BATCHES = (64, 512, 4096)
WORKER_MARK = "batchinfer.commands.serve"


def prepare(rows: int) -> tuple[Path, Path, Path]:
    """The network as model.pt and model.onnx (each alone in a directory), and the CSV."""
    torch.manual_seed(0)
    network = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 1),
    ).eval()
    example = torch.zeros(2, FEATURES)
    pt_dir, onnx_dir = DATA / "pt", DATA / "onnx"
    for folder in (pt_dir, onnx_dir):
        folder.mkdir(parents=True, exist_ok=True)
    torch.jit.save(torch.jit.trace(network, example), str(pt_dir / "model.pt"))
    torch.onnx.export(
        network,
        (example,),
        str(onnx_dir / "model.onnx"),
        dynamo=False,
        input_names=["x"],
        output_names=["y"],
        dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
    )
    data = DATA / "input" / "rows.csv"
    data.parent.mkdir(exist_ok=True)
    values = np.random.default_rng(0).normal(size=(rows, FEATURES)).astype(np.float32)
    np.savetxt(data, values, delimiter=",", fmt="%.6g")
    # The loop's decoded array: the CSV as the server reads it (float32 of the written text).
    np.save(DATA / "rows.npy", np.loadtxt(data, delimiter=",", dtype=np.float32, ndmin=2))
    return pt_dir, onnx_dir, data


LOOP = """
import resource, sys, time
import numpy as np
runtime, model, data, batch, device = sys.argv[1:6]
batch = int(batch)
rows = np.load(data)
if runtime == "torch":
    import torch
    module = torch.jit.load(model, map_location=device)
    def forward(x):
        with torch.inference_mode():
            return module(torch.from_numpy(x).to(device)).cpu().numpy()
else:
    import onnxruntime
    providers = ["CUDAExecutionProvider"] if device == "cuda" else ["CPUExecutionProvider"]
    session = onnxruntime.InferenceSession(model, providers=providers)
    def forward(x):
        return session.run(None, {"x": x})[0]
forward(rows[:2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the runtime and model loaded
for _ in range(3):  # warm up (TorchScript optimises a graph after its first runs)
    forward(rows[:batch])
started = time.perf_counter()
out = np.concatenate([forward(rows[i:i + batch]) for i in range(0, len(rows), batch)])
seconds = time.perf_counter() - started
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
np.save(sys.argv[6], out)
print(len(rows) / seconds, grown)
"""


def loop(runtime: str, model: Path, batch: int, device: str) -> tuple[float, float]:
    """rows/s of the in-process forward loop at ``batch`` on the decoded rows, and its peak
    RSS growth in MiB."""
    saved = DATA / f"loop-{runtime}.npy"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            LOOP,
            runtime,
            str(model),
            str(DATA / "rows.npy"),
            str(batch),
            device,
            saved,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    rate, grown = done.stdout.split()
    return float(rate), float(grown)


class WorkerPeak:
    """The highest VmHWM of any model server process while it runs (polled)."""

    def __init__(self) -> None:
        self.mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> "WorkerPeak":
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            for proc in Path("/proc").iterdir():
                try:
                    if WORKER_MARK not in (proc / "cmdline").read_text():
                        continue
                    status = (proc / "status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.mib = max(self.mib, int(line.split()[1]) / 1024)


def run(
    model_dir: Path, data: Path, batch: int, payload_mb: int, device: str
) -> tuple[float, float]:
    """rows/s of `batchinfer run` over its transform time (its manifest's: from the servers
    answering /ping to the last output, decoding, HTTP and encoding included) and its
    workers' peak RSS in MiB."""
    out = DATA / "out"
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    command = [
        sys.executable, "-m", "batchinfer", "run", str(data), "--model", str(model_dir),
        "--output", str(out), "--content-type", "text/csv", "--accept", "text/csv",
        "--split-type", "Line", "--assemble-with", "Line", "--max-payload-mb", str(payload_mb),
        "--max-batch-records", str(batch), "--quiet", "--json",
    ]  # fmt: skip
    with WorkerPeak() as peak:
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"batchinfer run failed:\n{done.stderr}")
    manifest = json.loads(done.stdout)
    return manifest["files"][0]["records_in"] / manifest["transform_seconds"], peak.mib


def check_outputs(runtime: str) -> None:
    """Stop unless `batchinfer run`'s output holds the loop's predictions (float32, exact)."""
    written = np.loadtxt(DATA / "out" / "rows.csv.out", dtype=np.float32, ndmin=1)
    expected = np.load(DATA / f"loop-{runtime}.npy").ravel()
    if not np.allclose(written, expected, rtol=1e-5, atol=1e-6):
        worst = float(np.max(np.abs(written - expected)))
        raise SystemExit(f"{runtime}: outputs differ from the loop's by up to {worst:g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--quick", action="store_true", help="20,000 rows, 3 batches, 1 pair")
    args = parser.parse_args()
    rows, repeat = (20_000, 1) if args.quick else (args.rows, args.repeat)
    batches = QUICK_BATCHES if args.quick else BATCHES
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: PyTorch sees no GPU here")
    card = torch.cuda.get_device_name(0) if args.device == "cuda" else f"{os.cpu_count()} CPUs"
    pt_dir, onnx_dir, data = prepare(rows)
    print(f"MLP {FEATURES}->256->256->1, {rows:,} rows of CSV, on {card}")
    print("in-process forward loop (decoded array), by forward batch:")
    header = ("batch", "torch rows/s", "RSS +MiB", "onnx rows/s", "RSS +MiB")
    print("  " + " ".join(f"{h:>{w}}" for h, w in zip(header, (7, 14, 9, 13, 9), strict=True)))
    curve: dict[str, dict[int, float]] = {"torch": {}, "onnx": {}}
    for batch in (b for b in batches if b <= rows):
        torch_rate, torch_rss = loop("torch", pt_dir / "model.pt", batch, args.device)
        onnx_rate, onnx_rss = loop("onnx", onnx_dir / "model.onnx", batch, args.device)
        curve["torch"][batch], curve["onnx"][batch] = torch_rate, onnx_rate
        print(
            f"  {batch:>7,} {torch_rate:>14,.0f} {torch_rss:>9.0f} "
            f"{onnx_rate:>13,.0f} {onnx_rss:>9.0f}"
        )
    for runtime, model_dir, model_file in (
        ("torch", pt_dir, "model.pt"),
        ("onnx", onnx_dir, "model.onnx"),
    ):
        best = max(curve[runtime], key=lambda b: curve[runtime][b])
        loops, runs, ratios = [], [], []
        for _ in range(repeat):  # alternating pairs
            loops.append(loop(runtime, model_dir / model_file, best, args.device)[0])
            rate, _peak = run(model_dir, data, best, 6, args.device)
            check_outputs(runtime)
            runs.append(rate)
            ratios.append(rate / loops[-1])
        print(
            f"{runtime}: best forward batch {best:,}; batchinfer run {statistics.median(runs):,.0f}"
            f" rows/s vs loop {statistics.median(loops):,.0f}: ratio "
            f"{statistics.median(ratios):.2f} (pairs {', '.join(f'{r:.2f}' for r in ratios)}; "
            "target >= 0.8, outputs checked)"
        )
        small = run(model_dir, data, best, 1, args.device)[1]
        large = run(model_dir, data, best, 32, args.device)[1]
        print(
            f"{runtime}: worker peak RSS {small:.0f} MiB at MaxPayloadInMB 1, {large:.0f} MiB at"
            f" 32: {large / small:.2f}x (target within 1.2x)"
        )
    onnx_best, torch_best = max(curve["onnx"].values()), max(curve["torch"].values())
    print(f"ONNX Runtime / PyTorch, best loop each: {onnx_best / torch_best:.2f}")


if __name__ == "__main__":
    main()
