"""Benchmark: a PyTorch network served by batchinfer against the in-process forward loop.

The model is a multilayer perceptron, 30 -> 256 -> 256 -> 1 with random weights (seeded),
saved as TorchScript (``model.pt``) and exported to ONNX (``model.onnx``); the input is CSV of
30 float features a row. In one run it measures:

1. the in-process forward loop on the decoded array, per forward batch size (every power of
   two from 64 to 65,536): rows/s with all this machine's cores to PyTorch, and the loop's
   peak RSS growth once the runtime and model are loaded, each batch size in a process of
   its own, in 3 rounds over the sizes (the median kept: a slow spell of this machine
   falls on one round of a few sizes, not on every pass of one) (the limit: decoding, HTTP
   and encoding are overhead on top);
   the same for ONNX Runtime at each size;
2. ``batchinfer run`` (transform engine, one instance, one worker per core) on the same rows
   with ``--max-batch-records`` at the loop's best size (the smallest within 5 % of the
   fastest), over its transform time (decoding,
   HTTP and encoding included, the servers' start-up not), in pairs alternating with the loop
   at that size; the median ratio run / loop (target >= 0.8), outputs checked against the
   loop;
3. the model server workers' peak RSS (VmHWM, polled in runs of their own, which are not
   timed) at MaxPayloadInMB 1 and 32 with that
   forward batch, or with the rows of a 1 MB request where the batch is larger (a 1 MB
   request never fills it): flat within 20 % is the target, whatever the request size;
4. the same run on the same rows as ``.npy`` requests (``--content-type application/x-npy
   --split-type None``, files of at most 4 MiB), the array the loop reads: the served path
   with no CSV to decode; at the loop's best batch, and as ``batchinfer plan --tune``
   recommends for those requests (requests in flight, forward batch, workers x threads),
   the tuned run of the target, and the forward batch the tune chose against the loop's
   best (the target: within 2x);
5. the ceiling of that ratio on this machine: one core's cost a row of what every served row
   needs, decoding the CSV (the server's decoder), the forward pass at the best batch with one
   thread, and encoding the answer, timed in one process on 6 MB bodies; the cores doing only
   that (no HTTP, no framing) would reach cores / (decode + forward + encode) rows/s, which,
   over the loop's rate, bounds the ratio any server could reach.

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

from batchinfer.planning.tune import TunePoint, point_environment

DATA = Path(__file__).resolve().parents[1] / ".data" / "torch"
FEATURES = 30
BATCHES = tuple(2**n for n in range(6, 17))  # 64, 128, ..., 65,536
LOOP_ROUNDS = 3  # rounds over the batch sizes, the median of each size kept
LOOP_PASSES = 3  # timed passes over the rows of a loop beside a run, the median kept
QUICK_BATCHES = (64, 512, 4096)
WORKER_MARK = "batchinfer.commands.serve"
NPY_FILE_BYTES = 4 * 1024 * 1024


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
runtime, model, data, batch, device, saved, passes = sys.argv[1:8]
batch = int(batch)
rows = np.load(data)
if runtime == "torch":
    import torch
    module = torch.jit.load(model, map_location=device)
    def forward(x):  # a copy, so that PyTorch frees each pass's tensor (codecs.host_values)
        with torch.inference_mode():
            return module(torch.from_numpy(x).to(device)).cpu().numpy().copy()
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
rates = []
for _ in range(int(passes)):
    started = time.perf_counter()
    out = np.concatenate([forward(rows[i:i + batch]) for i in range(0, len(rows), batch)])
    rates.append(len(rows) / (time.perf_counter() - started))
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
np.save(saved, out)
print(sorted(rates)[len(rates) // 2], grown)
"""


CEILING = """
import sys, time
import numpy as np
from batchinfer.serving.codecs import decode_csv, encode_csv
from batchinfer.serving.models import load_model
model_dir, data, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(data, "rb") as source:
    body = source.read(6 * 1024 * 1024)
body = body[: body.rfind(b"\\n") + 1]
model = load_model(__import__("pathlib").Path(model_dir))
def timed(step):
    step()
    started = time.perf_counter()
    for _ in range(3):
        value = step()
    return (time.perf_counter() - started) / 3, value
decode, rows = timed(lambda: decode_csv(body))
forward, out = timed(lambda: np.concatenate(
    [np.asarray(model.predict(rows[i:i + batch])) for i in range(0, len(rows), batch)]))
encode, _ = timed(lambda: encode_csv(out))
print(*(seconds / len(rows) * 1e9 for seconds in (decode, forward, encode)))
"""


def ceiling(model_dir: Path, data: Path, batch: int) -> tuple[float, float, float]:
    """One core's nanoseconds a row to decode a 6 MB CSV body, run the forward passes at
    ``batch``, and encode the answer (one thread: as each of the server's workers runs)."""
    threads = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env = {**os.environ, **threads, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-c", CEILING, str(model_dir), str(data), str(batch)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    decode, forward, encode = map(float, done.stdout.split())
    return decode, forward, encode


def loop(
    runtime: str, model: Path, batch: int, device: str, passes: int = LOOP_PASSES
) -> tuple[float, float]:
    """rows/s of the in-process forward loop at ``batch`` on the decoded rows (the median of
    its passes), and its peak RSS growth in MiB."""
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
            str(passes),
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


def npy_requests(rows: int) -> Path:
    """The loop's decoded rows as ``.npy`` files of at most 4 MiB (under MaxPayloadInMB 6),
    named in their order."""
    folder = DATA / "input-npy"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    values = np.load(DATA / "rows.npy")
    per_file = NPY_FILE_BYTES // values[0].nbytes
    for number, start in enumerate(range(0, rows, per_file)):
        np.save(folder / f"rows-{number:04d}.npy", values[start : start + per_file])
    return folder


def device_env(device: str) -> dict[str, str]:
    """This environment, with no GPU visible on ``cpu`` (the GPUs it sees on ``cuda``)."""
    return {**os.environ, "CUDA_VISIBLE_DEVICES": ""} if device == "cpu" else dict(os.environ)


def run(
    model_dir: Path,
    data: Path,
    batch: int | None,
    payload_mb: int,
    device: str,
    options: tuple[str, ...] = (),
) -> float:
    """rows/s of `batchinfer run` over its transform time (its manifest's: from the servers
    answering /ping to the last output, decoding, HTTP and encoding included). ``data``: the
    CSV file, or a folder of ``.npy`` requests; ``batch``: the forward batch (None: as
    ``options`` say)."""
    out = DATA / "out"
    shutil.rmtree(out, ignore_errors=True)
    shape = ["--content-type", "text/csv", "--split-type", "Line"]
    if data.is_dir():
        shape = ["--content-type", "application/x-npy", "--split-type", "None"]
    env = device_env(device)
    command = [
        sys.executable, "-m", "batchinfer", "run", str(data), "--model", str(model_dir),
        "--output", str(out), *shape, "--accept", "text/csv",
        "--assemble-with", "Line", "--max-payload-mb", str(payload_mb), "--quiet", "--json",
        *(() if batch is None else ("--max-batch-records", str(batch))), *options,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"batchinfer run failed:\n{done.stderr}")
    manifest = json.loads(done.stdout)
    rows = len(np.load(DATA / "rows.npy", mmap_mode="r"))
    return rows / manifest["transform_seconds"]


def worker_peak(model_dir: Path, data: Path, batch: int, payload_mb: int, device: str) -> float:
    """The model server workers' peak RSS in MiB over a run (polled: that run is not timed)."""
    with WorkerPeak() as peak:
        run(model_dir, data, batch, payload_mb, device)
    return peak.mib


def tuned(model_dir: Path, data: Path, device: str) -> tuple[tuple[str, ...], str, TunePoint]:
    """The options `batchinfer plan --tune` recommends for the ``.npy`` requests in ``data``
    (requests in flight, forward batch, workers x threads), how it put them, and the
    recommended point."""
    env = device_env(device)
    command = [
        sys.executable, "-m", "batchinfer", "plan", str(data), "--model", str(model_dir),
        "--content-type", "application/x-npy", "--split-type", "None", "--accept", "text/csv",
        "--assemble-with", "Line", "--max-payload-mb", "6", "--tune", "--json",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"batchinfer plan --tune failed:\n{done.stderr}")
    best = json.loads(done.stdout)["tune"]["recommended"]
    if best is None:
        raise SystemExit(f"batchinfer plan --tune measured nothing:\n{done.stdout}")
    point = TunePoint(**best)
    options = ["--max-concurrent-transforms", str(point.max_concurrent_transforms)]
    for name, value in point_environment(point).items():  # batch, workers, threads
        options += ["--env", f"{name}={value}"]
    return tuple(options), " ".join(options), point


def check_outputs(runtime: str) -> None:
    """Stop unless `batchinfer run`'s outputs, in order, hold the loop's predictions."""
    outputs = sorted((DATA / "out").glob("*.out"))
    written = np.concatenate([np.loadtxt(o, dtype=np.float32, ndmin=1) for o in outputs])
    expected = np.load(DATA / f"loop-{runtime}.npy").ravel()
    if not np.allclose(written, expected, rtol=1e-5, atol=1e-6):
        worst = float(np.max(np.abs(written - expected)))
        raise SystemExit(f"{runtime}: outputs differ from the loop's by up to {worst:g}")


def knee(rates: dict[int, float]) -> int:
    """The smallest forward batch within 5 % of the fastest: the loop's rates move between
    rounds even as medians, and a larger batch only costs memory."""
    fastest = max(rates.values())
    return min(batch for batch, rate in rates.items() if rate >= 0.95 * fastest)


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
    npy_data = npy_requests(rows)
    print(f"MLP {FEATURES}->256->256->1, {rows:,} rows of CSV, on {card}")
    print("in-process forward loop (decoded array), by forward batch:")
    header = ("batch", "torch rows/s", "RSS +MiB", "onnx rows/s", "RSS +MiB")
    print("  " + " ".join(f"{h:>{w}}" for h, w in zip(header, (7, 14, 9, 13, 9), strict=True)))
    models = {"torch": pt_dir / "model.pt", "onnx": onnx_dir / "model.onnx"}
    sizes = [b for b in batches if b <= rows]
    measured: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for _ in range(1 if args.quick else LOOP_ROUNDS):
        for batch in sizes:
            for runtime, model in models.items():
                point = loop(runtime, model, batch, args.device, passes=1)
                measured.setdefault((runtime, batch), []).append(point)
    curve: dict[str, dict[int, float]] = {"torch": {}, "onnx": {}}
    for batch in sizes:
        line = []
        for runtime in models:
            rates, grown = zip(*measured[runtime, batch], strict=True)
            curve[runtime][batch] = statistics.median(rates)
            line.append(f"{curve[runtime][batch]:>13,.0f} {max(grown):>9.0f}")
        print(f"  {batch:>7,}  {' '.join(line)}")
    for runtime, model_dir, model_file in (
        ("torch", pt_dir, "model.pt"),
        ("onnx", onnx_dir, "model.onnx"),
    ):
        best = knee(curve[runtime])
        loops, runs, ratios = [], [], []
        for _ in range(repeat):  # alternating pairs
            loops.append(loop(runtime, model_dir / model_file, best, args.device)[0])
            rate = run(model_dir, data, best, 6, args.device)
            check_outputs(runtime)
            runs.append(rate)
            ratios.append(rate / loops[-1])
        print(
            f"{runtime}: best forward batch {best:,}; batchinfer run {statistics.median(runs):,.0f}"
            f" rows/s vs loop {statistics.median(loops):,.0f}: ratio "
            f"{statistics.median(ratios):.2f} (pairs {', '.join(f'{r:.2f}' for r in ratios)}; "
            "target >= 0.8, outputs checked)"
        )
        options, said, point = tuned(model_dir, npy_data, args.device)
        npy_ratios, tuned_ratios = [], []
        for loop_rate in loops:  # the same loop rates, each beside runs on .npy requests
            npy_ratios.append(run(model_dir, npy_data, best, 6, args.device) / loop_rate)
            check_outputs(runtime)
            rate = run(model_dir, npy_data, None, 6, args.device, options)
            tuned_ratios.append(rate / loop_rate)
            check_outputs(runtime)
        print(
            f"{runtime}: the same rows as .npy requests (no CSV to decode): ratio "
            f"{statistics.median(npy_ratios):.2f} (pairs "
            f"{', '.join(f'{r:.2f}' for r in npy_ratios)}; outputs checked); as plan --tune "
            f"recommends ({said}): {statistics.median(tuned_ratios):.2f} (pairs "
            f"{', '.join(f'{r:.2f}' for r in tuned_ratios)}; target >= 0.8)"
        )
        chosen = point.forward_records
        print(
            f"{runtime}: plan --tune's forward batch {chosen:,}, the loop's best {best:,}: "
            f"{max(chosen, best) / min(chosen, best):g}x apart (target within 2x)"
        )
        if args.device == "cpu":
            decode, forward, encode = ceiling(model_dir, data, best)
            bound = (os.cpu_count() or 1) / ((decode + forward + encode) / 1e9)
            print(
                f"{runtime}: one core a row: decode {decode:,.0f} ns, forward {forward:,.0f} ns,"
                f" encode {encode:,.0f} ns; all cores doing only these: {bound:,.0f} rows/s,"
                f" a ratio of at most {bound / statistics.median(loops):.2f}"
            )
        # The same forward batch at both sizes: no larger than a 1 MB request's rows, which
        # a larger batch would never fill at MaxPayloadInMB 1.
        with open(data, "rb") as source:
            fitting = min(best, source.read(1024 * 1024).count(b"\n"))
        small = worker_peak(model_dir, data, fitting, 1, args.device)
        large = worker_peak(model_dir, data, fitting, 32, args.device)
        print(
            f"{runtime}: worker peak RSS with forward batch {fitting:,}: {small:.0f} MiB at "
            f"MaxPayloadInMB 1, {large:.0f} MiB at 32: {large / small:.2f}x (target within 1.2x)"
        )
    onnx_best, torch_best = max(curve["onnx"].values()), max(curve["torch"].values())
    print(f"ONNX Runtime / PyTorch, best loop each: {onnx_best / torch_best:.2f}")


if __name__ == "__main__":
    main()
