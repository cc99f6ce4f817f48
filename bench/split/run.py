"""Benchmark of ``batchinfer split`` against its baselines, measured in one run.

    .venv/bin/python bench/split/run.py [--size-mb 1024] [--shards 16] [--s3-size-mb 128] [--quick]

Generates a CSV under bench/.data/split/ (reused when its size matches), then times:
our local split into N shards, ``cp`` of the same file, and a per-line Python splitter
(the usual approach); prints the ratios. Then counts the bytes the S3 splitter reads
(moto) against the input size, and measures the peak memory (ru_maxrss) of a gzip split
in a subprocess against one that only imports the library. Targets: local split <= 1.0 x
cp and >= 5 x faster than per-line; S3 bytes read <= 0.1 %; gzip peak < 256 MiB.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import boto3
from moto import mock_aws

from batchinfer.sharding import split

DATA = Path(__file__).resolve().parents[1] / ".data" / "split"
MIB = 1 << 20
QUICK_SIZE_MB, QUICK_S3_SIZE_MB = 128, 64  # --quick: under a minute


def generate_csv(path: Path, size: int) -> None:
    """Write ``size`` bytes (rounded to whole lines) of numeric CSV rows to ``path``."""
    if path.exists() and abs(path.stat().st_size - size) < MIB:
        return
    rng = random.Random(7)
    lines = [
        ",".join([str(n), *(f"{rng.random():.6f}" for _ in range(12)), rng.choice("ab")]) + "\n"
        for n in range(12_000)
    ]
    block = "".join(lines).encode()
    with open(path, "wb") as out:
        written = 0
        while written < size:
            out.write(block)
            written += len(block)


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def per_line_split(source: Path, out_dir: Path, shards: int) -> None:
    """The usual splitter: read every line, start the next file after size/shards bytes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = source.stat().st_size // shards
    number, written = 0, 0
    out = open(out_dir / f"part-{number:05d}.csv", "wb")  # noqa: SIM115
    with open(source, "rb") as lines:
        for line in lines:
            if written >= target and number < shards - 1:
                out.close()
                number, written = number + 1, 0
                out = open(out_dir / f"part-{number:05d}.csv", "wb")  # noqa: SIM115
            out.write(line)
            written += len(line)
    out.close()


def best_of_interleaved(repeats: int, runs: dict) -> dict[str, float]:
    """Best wall time of each ``name: (action, cleanup)``, the runs interleaved round by
    round; dirty pages are flushed before each timing so one run's writeback does not
    slow the next."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for name, (action, cleanup) in runs.items():
            os.sync()
            best[name] = min(best[name], timed(action))
            cleanup()
    return best


def local_benchmark(source: Path, shards: int, repeats: int) -> None:
    ours_dir, line_dir, cp_file = DATA / "ours", DATA / "per-line", DATA / "cp-copy.csv"
    subprocess.run(["cat", str(source)], stdout=subprocess.DEVNULL, check=True)  # warm cache
    best = best_of_interleaved(
        repeats,
        {
            "ours": (
                lambda: split(str(source), str(ours_dir), shards=shards),
                lambda: shutil.rmtree(ours_dir),
            ),
            "cp": (
                lambda: subprocess.run(["cp", str(source), str(cp_file)], check=True),
                lambda: cp_file.unlink(),
            ),
            "per-line": (
                lambda: per_line_split(source, line_dir, shards),
                lambda: shutil.rmtree(line_dir),
            ),
        },
    )
    ours, cp, per_line = best["ours"], best["cp"], best["per-line"]
    size_mb = source.stat().st_size / MIB
    print(f"local: {size_mb:,.0f} MiB into {shards} shards, best of {repeats}")
    print(f"  ours {ours:.3f} s   cp {cp:.3f} s   per-line Python {per_line:.3f} s")
    print(f"  ours / cp = {ours / cp:.3f}  (target <= 1.0)")
    print(f"  per-line / ours = {per_line / ours:.1f} x  (target >= 5)")


def s3_benchmark(source: Path, size: int, shards: int) -> None:
    with open(source, "rb") as f:
        data = f.read(size)
    data = data[: data.rfind(b"\n") + 1]
    for name, value in {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}.items():
        os.environ.setdefault(name, value)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="bench")
        s3.put_object(Bucket="bench", Key="in/data.csv", Body=data)
        read = []
        s3.meta.events.register(
            "after-call.s3.GetObject", lambda parsed, **_: read.append(parsed["ContentLength"])
        )
        index = split("s3://bench/in/data.csv", "s3://bench/out/", shards=shards, s3_client=s3)
    print(f"S3 (moto): {len(data) / MIB:,.0f} MiB into {len(index.shards)} shards")
    print(f"  bytes read {sum(read):,} in {len(read)} ranged GETs")
    print(f"  bytes read / input = {sum(read) / len(data):.5%}  (target <= 0.1%)")


# ru_maxrss survives fork and exec on Linux (a child starts at its parent's peak), so the
# child also reports VmHWM, the peak of its own address space only.
_PEAK = """
import re, resource
{work}
status = open("/proc/self/status").read()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, re.search(r"VmHWM:\\s+(\\d+)", status)[1])
"""


def peak_kib(work: str) -> tuple[int, int]:
    """(ru_maxrss, VmHWM) in KiB of a fresh interpreter running ``work``."""
    code = _PEAK.format(work=work)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    maxrss, hwm = result.stdout.split()[-2:]
    return int(maxrss), int(hwm)


def gzip_benchmark(source: Path, shards: int) -> None:
    compressed = DATA / "input.csv.gz"
    if not compressed.exists() or compressed.stat().st_mtime < source.stat().st_mtime:
        with open(compressed, "wb") as out:
            subprocess.run(["gzip", "-1", "-c", str(source)], stdout=out, check=True)
    out_dir = DATA / "gzip-shards"
    base_rss, base_hwm = peak_kib("import batchinfer.sharding")
    start = time.perf_counter()
    peak, hwm = peak_kib(
        f"from batchinfer.sharding import split\nsplit({str(compressed)!r}, {str(out_dir)!r}, "
        f"shards={shards})"
    )
    elapsed = time.perf_counter() - start
    shutil.rmtree(out_dir)
    print(f"gzip: {source.stat().st_size / MIB:,.0f} MiB uncompressed into {shards} gzip shards")
    print(
        f"  {elapsed:.1f} s; ru_maxrss {peak / 1024:.0f} MiB, VmHWM {hwm / 1024:.0f} MiB "
        f"(import only: {base_rss / 1024:.0f} / {base_hwm / 1024:.0f} MiB)"
    )
    print(f"  ru_maxrss / 256 MiB = {peak / 1024 / 256:.2f}  (target < 1)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--s3-size-mb", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    quick = f"--size-mb {QUICK_SIZE_MB} --s3-size-mb {QUICK_S3_SIZE_MB} --repeats 1"
    parser.add_argument("--quick", action="store_true", help=quick)
    args = parser.parse_args()
    if args.quick:
        args.size_mb, args.s3_size_mb, args.repeats = QUICK_SIZE_MB, QUICK_S3_SIZE_MB, 1
    DATA.mkdir(parents=True, exist_ok=True)
    source = DATA / "input.csv"
    generate_csv(source, args.size_mb * MIB)
    local_benchmark(source, args.shards, args.repeats)
    gzip_benchmark(source, args.shards)  # before moto makes this process (and forks) large
    s3_benchmark(source, args.s3_size_mb * MIB, args.shards)


if __name__ == "__main__":
    main()
