"""Benchmark: Plan and Collect on runs of many input objects, in moto, in one process.

    PYTHONPATH=. .venv/bin/python bench/pipeline/objects.py [--objects 100000]
        [--baseline 10000] [--steps plan collect] [--quick]

For each size it stores the input objects (Plan) or the state the split Map leaves, one
shard index per object and the Map's result files listing each object's shards (Collect),
then runs the step under tracemalloc: its seconds (with tracing on, so slower than without)
and its peak of Python allocations. moto answers every call in this process and keeps what
the step writes (objects, items) in memory, where S3 and DynamoDB would keep it: the step's
own peak is the peak less what is still allocated when the step returns. It prints seconds
and MiB per size and the large run's ratios to the baseline, after a warm-up run of 10
objects (first calls import and build clients). Seconds measure the code paths and moto,
not AWS latency.
"""

import argparse
import os
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import boto3
from moto import mock_aws

from batchinfer.pipeline.steps.collect import collect
from batchinfer.pipeline.steps.plan import plan_run
from batchinfer.pipeline.storage.status_table import StatusTable
from batchinfer.units import MIB
from tests.support import aws, many_objects, run_state

BUCKET = run_state.BUCKET
REGION = "eu-west-1"
EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:bench"
ENV = run_state.example_env("bench")


def measured(step: Callable[[], Any]) -> tuple[float, float, float]:
    """(seconds, peak MiB, MiB still allocated after) of ``step()`` under tracemalloc."""
    tracemalloc.start()
    start = time.perf_counter()
    step()
    seconds = time.perf_counter() - start
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / MIB, held / MIB


def account() -> tuple[Any, StatusTable]:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    return s3, StatusTable(aws.create_status_table("runs", REGION))


def plan_step(objects: int) -> tuple[float, float]:
    with mock_aws():
        s3, table = account()
        many_objects.put_inputs(BUCKET, "input/bench/", objects)
        request = {"input": f"s3://{BUCKET}/input/bench/", "run_id": "bench"}
        return measured(
            lambda: plan_run(
                request,
                execution=EXECUTION,
                execution_name="bench",
                started_at="2025-01-01T00:00:00Z",
                env=ENV,
                s3=s3,
                sagemaker=None,
                table=table,
            )
        )


def collect_step(objects: int) -> tuple[float, float]:
    with mock_aws():
        s3, table = account()
        plan = run_state.example_plan(run_id="bench")
        table.create_run("bench", EXECUTION, objects=objects)
        splits = many_objects.split_state(plan, objects, s3)
        return measured(
            lambda: collect(plan, execution=EXECUTION, splits=splits, s3=s3, table=table)
        )


STEPS = {"plan": plan_step, "collect": collect_step}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--baseline", type=int, default=10_000)
    parser.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    parser.add_argument("--quick", action="store_true", help="--objects 2000 --baseline 200")
    args = parser.parse_args()
    if args.quick:
        args.objects, args.baseline = 2_000, 200
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    for step_name in args.steps:
        step = STEPS[step_name]
        step(10)
        rows = []
        for count in (args.baseline, args.objects):
            seconds, peak, held = step(count)
            rows.append((seconds, peak - held))
            print(
                f"{step_name:8} {count:>7} objects: {seconds:7.1f} s, peak {peak:6.1f} MiB, "
                f"{held:6.1f} MiB held after (moto's store), step's own peak "
                f"{peak - held:5.1f} MiB",
                flush=True,
            )
        (base_s, base_own), (big_s, big_own) = rows
        print(
            f"{step_name:8} x{args.objects / args.baseline:g} objects: "
            f"time x{big_s / base_s:.1f}, step's own peak x{big_own / base_own:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
