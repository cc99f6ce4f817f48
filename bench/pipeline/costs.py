"""Benchmark: what whole runs cost per unit, in the offline harness, in one process.

    PYTHONPATH=. .venv/bin/python bench/pipeline/costs.py [--sizes 1 4 16] [--objects 10 100 1000]
        [--shards 4] [--quick]

Each run is the synthesized state machine (the dev environment of cdk.json) run by moto with
the real Lambda handlers and the local engine as SageMaker (tests/support/offline), on a
plain CSV run (no merge) with the spec's row-sum model: one object of each size in MB (in
``--shards`` shards), then each count of 1 KiB objects. For each it prints the Lambda
handlers' seconds (the sum over every invocation: what Lambda bills, less start-up) and the
bytes their S3 GetObject calls returned (recorded per runtime by the permission recorder),
per GB of input and per input byte, and per 1,000 objects; then each run's ratio to the
smallest run of its series, so that a cost growing faster than the input shows. Seconds
measure the code paths and moto in this process, not AWS latency; bytes are exact.
"""

import argparse
import os
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

# ``tests`` is the repository's folder (a namespace package), not a site package of that
# name, which ``import`` would find first.
REPO = Path(__file__).resolve().parents[2]
sys.modules["tests"] = types.ModuleType("tests")
sys.modules["tests"].__path__ = [str(REPO / "tests")]

from tests.support.models import ROW_SUM  # noqa: E402
from tests.support.offline import model_archive, offline_stack  # noqa: E402
from tests.support.offline.synthesized import synthesize  # noqa: E402

MB = 1_000_000
GB = 1_000_000_000
ROW = b"1234567,1234568,2469134\n"  # 24 bytes a row
RUN_TIMEOUT = 4 * 3600.0  # seconds a run may take in moto (1,000 objects take many minutes)


@dataclass(frozen=True)
class Cost:
    """What one run cost: its input, the Lambda handlers' seconds, the bytes they read."""

    objects: int
    input_bytes: int
    lambda_seconds: float
    bytes_read: int
    by_step: dict[str, int]

    @property
    def read_per_input_byte(self) -> float:
        return self.bytes_read / self.input_bytes


def csv_object(size: int) -> bytes:
    return ROW * max(1, size // len(ROW))


def run(template: dict, archive: Path, objects: dict[str, bytes], shards: int | None) -> Cost:
    """A plain CSV run of ``objects`` (key under input/bench/ -> body): what it cost."""
    with offline_stack(template, archive) as stack:
        for key, body in objects.items():
            stack.put(f"input/bench/{key}", body)
        request: dict = {"input": f"s3://{stack.bucket}/input/bench/"}
        if shards:
            request["shards"] = shards
        execution = stack.wait(stack.start(request, "bench"), timeout=RUN_TIMEOUT)
        if execution.status != "SUCCEEDED":
            raise SystemExit(f"the run failed: {execution.error}: {execution.cause}")
        by_step = {step: read for step, read in stack.bytes_read_by_lambdas().items() if read}
        return Cost(
            objects=len(objects),
            input_bytes=sum(len(body) for body in objects.values()),
            lambda_seconds=sum(stack.lambdas.seconds.values()),
            bytes_read=sum(by_step.values()),
            by_step=by_step,
        )


def report(label: str, cost: Cost, base: Cost) -> None:
    per_gb = cost.lambda_seconds / cost.input_bytes * GB
    per_1000 = cost.lambda_seconds / cost.objects * 1000
    base_per_gb = base.lambda_seconds / base.input_bytes * GB
    base_per_1000 = base.lambda_seconds / base.objects * 1000
    steps = ", ".join(
        f"{step} {read / cost.input_bytes:.2f}" for step, read in cost.by_step.items()
    )
    print(
        f"{label:>14}: {cost.input_bytes / MB:7.2f} MB in, {cost.lambda_seconds:7.2f} "
        f"Lambda-s: {per_gb:8.1f} Lambda-s/GB (x{per_gb / base_per_gb:.2f}), {per_1000:7.1f} "
        f"Lambda-s/1,000 objects (x{per_1000 / base_per_1000:.2f}); bytes read by Lambdas "
        f"per input byte {cost.read_per_input_byte:.3f} "
        f"(x{cost.read_per_input_byte / base.read_per_input_byte:.2f}; {steps})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16], help="MB")
    parser.add_argument("--objects", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--shards", type=int, default=4, help="shards per object, sizes")
    parser.add_argument("--quick", action="store_true", help="--sizes 1 4 --objects 10 100")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.objects = [1, 4], [10, 100]
    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        quick = {"interval_seconds": 1, "backoff_rate": 1.0, "max_attempts": 3}
        template = synthesize(
            "dev", folder / "cdk.out", {"retry": quick | {"max_delay_seconds": 1}}
        )
        archive = model_archive(ROW_SUM, folder)
        run(template, archive, {"warm-up.csv": csv_object(1000)}, None)  # imports, clients
        sizes = [
            run(template, archive, {"a.csv": csv_object(mb * MB)}, args.shards)
            for mb in sorted(args.sizes)
        ]
        for mb, cost in zip(sorted(args.sizes), sizes, strict=True):
            report(f"{mb} MB", cost, sizes[0])
        counts = []
        for count in sorted(args.objects):
            objects = {f"{i:05d}.csv": csv_object(1024) for i in range(count)}
            counts.append(run(template, archive, objects, None))
            report(f"{count} objects", counts[-1], counts[0])


if __name__ == "__main__":
    main()
