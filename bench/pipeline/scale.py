"""Benchmark: each pipeline step at AWS scale, against fake AWS clients that charge each call
AWS's documented latency and transfer time (tests/support/scale/costs.py).

    PYTHONPATH=. .venv/bin/python bench/pipeline/scale.py [--quick] [--cases plan verify ...]

Each case runs the step's real code twice at its size: under tracemalloc for the peak of
Python allocations, then untraced for the modelled seconds (its calls' AWS time, the worker
threads' share spread over them, plus its CPU seconds here scaled to the function's share of a
vCPU). It prints one row a case: the step, the case, peak MiB with the runtime's own baseline
against the function's memory, modelled seconds against its timeout (from the main thread's
calls overlapping the workers' to none overlapping; the share is of the larger), and which
limit comes first (the larger share of its limit). ``--quick`` runs each case at a tenth of
its size or less, in under a minute.
"""

import argparse
import os
import subprocess
import sys

from tests.support.scale.cases import CASES, Outcome

# The runtime before a step allocates anything: Python, boto3, the step's imports and the
# clients a handler makes, as a resident set (measured in a fresh process, see runtime_mib).
RUNTIME_IMPORTS = (
    "import boto3, batchinfer.pipeline.steps.{module}; "
    "[boto3.client(s, region_name='eu-west-1') for s in ('s3', 'dynamodb', 'stepfunctions')]; "
    "boto3.resource('dynamodb', region_name='eu-west-1')"
)


def runtime_mib(module: str) -> float:
    """The resident MiB of a fresh Python that imported boto3 and the step's module."""
    # VmHWM, the peak resident set of this process image (getrusage's ru_maxrss would keep
    # the parent's across fork and exec).
    code = RUNTIME_IMPORTS.format(module=module) + "; print(open('/proc/self/status').read())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    peak = next(line for line in out.stdout.splitlines() if line.startswith("VmHWM:"))
    return int(peak.split()[1]) / 1024


def row(outcome: Outcome, timed: Outcome, baseline: float) -> str:
    peak = (outcome.figures.peak_mib or 0.0) + baseline
    seconds, least = timed.figures.seconds, timed.figures.overlapped_seconds
    memory_share = peak / outcome.memory_mb
    time_share = seconds / outcome.timeout_seconds
    first = "memory" if memory_share >= time_share else "time"
    return (
        f"| {outcome.step} | {outcome.case} | {peak:,.0f} MiB of {outcome.memory_mb:,} "
        f"({memory_share:.0%}) | {least:,.0f}-{seconds:,.0f} s of {outcome.timeout_seconds:,} "
        f"({time_share:.0%}) | {first} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--quick", action="store_true", help="a tenth of each size or less")
    args = parser.parse_args()
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    print("| step | case | peak memory (runtime + step) | modelled seconds | limit first |")
    print("|---|---|---|---|---|")
    for name in args.cases:
        case = CASES[name]
        size = case.quick if args.quick else case.size
        case.run(case.warm_up, True)  # first calls import and build clients
        traced = case.run(size, True)
        timed = case.run(size, False)
        print(row(traced, timed, runtime_mib(case.module)), flush=True)


if __name__ == "__main__":
    main()
