"""The cases of the scale harness: each seeds fake S3 and a status table with the state a step
meets in a run of a given size, and runs the step's real code against them under the meter.

The S3 objects live in a folder of files (or as repeated lines), the SHARD items are made up
when read, and the RUN items and other DynamoDB and Step Functions calls go to a moto server
in another process: what the step itself holds is what tracemalloc sees. Seeding happens
before the meter starts."""

import io
import itertools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol
from unittest import mock
from urllib.request import urlopen

import boto3
import numpy as np

from batchinfer.pipeline.contract import registry
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.layout import MAP_RESULTS_FORMAT, MAP_RESULTS_PREFIX
from batchinfer.pipeline.contract.state import (
    JobOutcome,
    MergeTask,
    RunPlan,
    ShardCount,
    ShardEntry,
)
from batchinfer.pipeline.steps.split_object import split_result
from batchinfer.pipeline.storage.shard_indexes import split_index
from batchinfer.pipeline.storage.status_table import (
    MISSING,
    PARTITION_KEY,
    SORT_KEY,
    SUCCEEDED,
    StatusTable,
    shard_partition,
    shard_sk,
)
from batchinfer.sharding import ShardIndex
from batchinfer.sharding.index import Shard
from batchinfer.sharding.names import index_name, shard_name
from batchinfer.transform.assemble import output_name
from batchinfer.uris import parse_s3_uri
from stacks.triggers import ARRIVALS_MEMORY_MB, ARRIVALS_TIMEOUT_SECONDS
from tests.support.aws import create_status_table
from tests.support.many_objects import object_name
from tests.support.map_results import Child, write_map_results
from tests.support.offline.arrivals import object_created
from tests.support.run_state import BUCKET, example_env, example_plan, example_round
from tests.support.scale.costs import (
    DYNAMODB_REQUEST_SECONDS,
    STATES_REQUEST_SECONDS,
    STATES_START_BUCKET,
    STATES_STARTS_PER_SECOND,
)
from tests.support.scale.fake_s3 import FakeS3
from tests.support.scale.fake_table import FakeTable, ShardItem
from tests.support.scale.meter import Meter, StepFigures

REGION = "eu-west-1"
EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:scale"
ENV = example_env("scale")


@dataclass
class Account:
    """The fakes a case seeds and a step runs against."""

    meter: Meter
    s3: FakeS3
    table: FakeTable

    @property
    def status(self) -> StatusTable:
        return StatusTable(self.table)


@dataclass(frozen=True)
class Outcome:
    """One step run at one size: its figures and the limits of its function."""

    step: str
    case: str
    figures: StepFigures
    memory_mb: int
    timeout_seconds: int
    result: Any


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's server in a process of its own (its memory is not the step's), on a free
    localhost port; its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urlopen(f"{url}/moto-api/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"moto's server did not answer at {url} within 30 s")
        yield url
    finally:
        server.terminate()
        server.wait()


@contextmanager
def account(shard_item: ShardItem | None = None) -> Iterator[Account]:
    """Fake S3 in a temporary folder, and the status table and Step Functions in a moto
    server (``AWS_ENDPOINT_URL`` points the clients made meanwhile at it)."""
    with (
        tempfile.TemporaryDirectory() as folder,
        moto_server() as url,
        mock.patch.dict(os.environ, {"AWS_ENDPOINT_URL": url}),
    ):
        meter = Meter()
        table = create_status_table("runs", REGION)
        yield Account(meter, FakeS3(Path(folder), meter), FakeTable(table, meter, shard_item))


class Function(Protocol):
    """A Lambda's name and limits: a registry step, or :data:`ARRIVALS`."""

    @property
    def name(self) -> str: ...
    @property
    def memory_mb(self) -> int: ...
    @property
    def timeout_seconds(self) -> int: ...


@dataclass(frozen=True)
class TriggerFunction:
    name: str
    memory_mb: int
    timeout_seconds: int


ARRIVALS = TriggerFunction("arrivals", ARRIVALS_MEMORY_MB, ARRIVALS_TIMEOUT_SECONDS)


def run_step(
    account: Account, step: Function, case: str, call: Callable[[], Any], trace: bool
) -> Outcome:
    """``call`` (the step's library function) under the meter, with ``step``'s limits."""
    result, figures = account.meter.run(call, step.memory_mb, trace=trace)
    return Outcome(step.name, case, figures, step.memory_mb, step.timeout_seconds, result)


def plan_objects(objects: int, trace: bool = True, parquet: bool = False) -> Outcome:
    """Plan listing ``objects`` input objects of 1 MB under one prefix; with ``parquet``,
    Parquet objects of 100 row groups, whose footers Plan reads."""
    from batchinfer.pipeline.steps.plan import plan_run

    request = {"input": f"s3://{BUCKET}/input/scale/", "run_id": "scale"}
    with account() as aws:
        keys = (f"input/scale/{object_name(number)}" for number in range(objects))
        if parquet:
            aws.s3.seed_copies(BUCKET, keys, _parquet_object())
            request |= {"content_type": "application/x-parquet", "split_type": "None"}
        else:
            for key in keys:
                aws.s3.seed_lines(BUCKET, key, 1024 * 1024)
        return run_step(
            aws,
            registry.PLAN,
            f"{objects:,} {'Parquet ' if parquet else ''}objects",
            lambda: plan_run(
                request,
                execution=EXECUTION,
                execution_name="scale",
                started_at="2026-01-01T00:00:00Z",
                env=ENV,
                s3=aws.s3,
                sagemaker=None,
                table=aws.status,
            ),
            trace,
        )


def _parquet_object() -> bytes:
    """About 1.2 MB of Parquet in 100 row groups, with a footer of about 13 KB: Plan's one
    ranged read of an object's last 64 KiB holds it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    numbers = np.random.default_rng(0).random(125_000)
    sink = io.BytesIO()
    pq.write_table(pa.table({"x": numbers}), sink, row_group_size=1_250, compression="none")
    return sink.getvalue()


@dataclass(frozen=True)
class Case:
    """A step at scale: ``run(size, trace)``; ``size`` the figure docs/scaling.md states,
    ``quick`` a size that runs in seconds, ``module`` the step's module under
    batchinfer.pipeline.steps."""

    run: Callable[[int, bool], Outcome]
    size: int
    quick: int
    module: str
    warm_up: int = 10


def shard_entry(number: int, shards_per_object: int = 10) -> ShardEntry:
    """Shard ``number`` of a run whose objects each make ``shards_per_object`` shards."""
    folder, name = object_name(number // shards_per_object).split("/")
    part = shard_name(name, number % shards_per_object)
    return ShardEntry(
        number, f"{folder}/{part}", f"s3://{BUCKET}/input/{folder}/{name}", name, 64 * 1024**2
    )


def verify_round(shards: int, trace: bool = True) -> Outcome:
    """Verify gathering a round of ``shards`` shard checks, 1 in 100 without output."""
    from batchinfer.pipeline.steps.verify import verify

    plan = example_plan(run_id="scale")

    def checks() -> Iterator[Child]:
        for number in range(shards):
            shard = shard_entry(number)
            valid = number % 100
            check = ShardCount(
                shard,
                f"{plan.job_output}{shard.name}.out",
                None if valid else "no output",
                {"records_in": 1000, "records_out": 1000} if valid else {},
            )
            yield Child({"shard": shard.to_line()}, check.to_state())

    with account() as aws:
        aws.status.create_run("scale", EXECUTION, objects=shards // 10)
        run = f"arn:aws:states:{REGION}:123456789012:mapRun:runs/CountShards:scale"
        counts = write_map_results(
            aws.s3, BUCKET, MAP_RESULTS_PREFIX, run, checks(), MAP_RESULTS_FORMAT
        )
        round_ = replace(example_round(), shards=shards, missing=shards)
        job = JobOutcome.from_state({"name": "bi-scale-r1", "status": "Completed"})
        return run_step(
            aws,
            registry.VERIFY,
            f"{shards:,} shards in a round",
            lambda: verify(
                plan,
                round_,
                job,
                counts=counts,
                execution=EXECUTION,
                s3=aws.s3,
                table=aws.status,
                capacity_wait=0,
            ),
            trace,
        )


def made_up_shards(shards: int, missing_every: int) -> ShardItem:
    """The SHARD items of a run of ``shards`` shards as Collect and Verify write them, one in
    ``missing_every`` MISSING."""

    def item(run_id: str, number: int) -> dict[str, Any] | None:
        if number >= shards:
            return None
        shard = shard_entry(number)
        missing = number % missing_every == missing_every - 1
        return {
            PARTITION_KEY: shard_partition(run_id, number),
            SORT_KEY: shard_sk(number),
            "shard": number,
            "name": shard.name,
            "input": shard.input,
            "status": MISSING if missing else SUCCEEDED,
            "attempts": 3,
            "records_in": 1000,
            "records_out": 1000,
        }

    return item


def announcing(aws: Account) -> tuple[PipelineEnvironment, Any, Any]:
    """The pipeline's environment with a topic and an event bus in the moto server, and
    their clients, charged as Step Functions' requests are."""
    events = boto3.client("events", region_name=REGION)
    sns = boto3.client("sns", region_name=REGION)
    for client in (events, sns):
        aws.meter.attach(client, lambda _: STATES_REQUEST_SECONDS)
    env = replace(
        ENV,
        topic_arn=sns.create_topic(Name="runs")["TopicArn"],
        event_bus_name=events.create_event_bus(Name="runs")["EventBusArn"].split("/")[-1],
    )
    return env, events, sns


def finalize_run(shards: int, trace: bool = True) -> Outcome:
    """Finalize recording a merged run of ``shards`` shards, 10 an input object: the shard
    list streamed, the SHARD items' counts read (made up as they are read)."""
    from batchinfer.pipeline.steps.finalize import finalize

    with account(made_up_shards(shards, missing_every=shards + 1)) as aws:
        plan = replace(example_plan(run_id="scale"), merge=True)
        aws.status.create_run("scale", EXECUTION, objects=shards // 10)
        lines = (json.dumps(shard_entry(n).to_line()) + "\n" for n in range(shards))
        aws.s3.seed_lines_of(BUCKET, plan.layout.shard_list.key, lines)
        env, events, sns = announcing(aws)
        return run_step(
            aws,
            registry.FINALIZE,
            f"{shards:,} shards, {shards // 10:,} objects",
            lambda: finalize(
                plan,
                execution=EXECUTION,
                env=env,
                s3=aws.s3,
                table=aws.status,
                events=events,
                sns=sns,
                sagemaker=None,
            ),
            trace,
        )


def record_failure_run(shards: int, trace: bool = True) -> Outcome:
    """RecordFailure closing a run of ``shards`` shards that failed in its last round, one
    shard in 10,000 without output (the SHARD items it reads are made up as it reads)."""
    from batchinfer.pipeline.steps.record_failure import record_failure

    with account(made_up_shards(shards, missing_every=10_000)) as aws:
        plan = example_plan(run_id="scale")
        aws.status.create_run("scale", EXECUTION, objects=shards // 10)
        env, events, sns = announcing(aws)
        state = {
            "plan": plan.to_state(),
            "error": {"Error": "ShardsMissing", "Cause": "shards have no valid output"},
        }
        return run_step(
            aws,
            registry.RECORD_FAILURE,
            f"{shards:,} shards",
            lambda: record_failure(
                state,
                execution=EXECUTION,
                execution_name="scale",
                env=env,
                table=aws.status,
                events=events,
                sns=sns,
                sagemaker=None,
            ),
            trace,
        )


def seed_split(aws: Account, plan: RunPlan, number: int, shards: int, shard_size: int) -> str:
    """What the split of input object ``number`` left: its shard index (``shards`` shards of
    ``shard_size`` bytes) and the shards' outputs of a job; its split task's line."""
    folder, name = object_name(number).split("/")
    source = parse_s3_uri(plan.input).child(f"{folder}/{name}")
    prefix = plan.shards_prefix + folder + "/"
    parts = [
        Shard(part, prefix + part, 0, shard_size, shard_size)
        for part in (shard_name(name, n) for n in range(shards))
    ]
    index = ShardIndex(source.uri, '"etag"', shards * shard_size, "None", None, prefix, parts)
    aws.s3.seed(BUCKET, parse_s3_uri(prefix).child(index_name(name)).key, index.to_json().encode())
    for part in parts:
        output = parse_s3_uri(plan.job_output).child(output_name(f"{folder}/{part.name}"))
        aws.s3.seed_lines(BUCKET, output.key, shard_size)
    return json.dumps({"input": source.uri, "output": prefix}) + "\n"


def collect_run(objects: int, trace: bool = True, shards_each: int = 1) -> Outcome:
    """Collect gathering the splits of ``objects`` input objects of ``shards_each`` shards."""
    from batchinfer.pipeline.steps.collect import collect

    with account() as aws:
        plan = example_plan(run_id="scale")
        aws.status.create_run("scale", EXECUTION, objects=objects)
        tasks = (seed_split(aws, plan, n, shards_each, 1000) for n in range(objects))
        aws.s3.seed_lines_of(BUCKET, plan.inputs_key, tasks)
        seeded = aws.s3.body(BUCKET, plan.inputs_key).splitlines()
        splits = seed_split_results(aws, (json.loads(task) for task in seeded))
        return run_step(
            aws,
            registry.COLLECT,
            f"{objects:,} objects, {objects * shards_each:,} shards",
            lambda: collect(plan, execution=EXECUTION, splits=splits, s3=aws.s3, table=aws.status),
            trace,
        )


def seed_split_results(aws: Account, tasks: Iterator[dict[str, Any]]) -> str:
    """The SplitInputs Map's result files for ``tasks``, each child's answer listing the shards
    its index holds, in one JSON Lines file; the key of their manifest."""
    folder = f"{MAP_RESULTS_PREFIX}SplitInputs/"

    def answers() -> Iterator[str]:
        for task in tasks:
            index = split_index(aws.s3, task["input"], task["output"])  # seeding: not metered
            yield json.dumps(split_result(task["input"], index).to_state()) + "\n"

    aws.s3.seed_lines_of(BUCKET, folder + "SUCCEEDED_0.json", answers())
    files = {"SUCCEEDED": [{"Key": folder + "SUCCEEDED_0.json"}], "FAILED": [], "PENDING": []}
    manifest = {"DestinationBucket": BUCKET, "MapRunArn": "scale", "ResultFiles": files}
    aws.s3.seed(BUCKET, folder + "manifest.json", json.dumps(manifest).encode())
    return folder + "manifest.json"


def merge_object_run(megabytes: int, trace: bool = True) -> Outcome:
    """MergeObject merging one input object's 10 shard outputs of ``megabytes`` in all (a
    terabyte in 10,000 objects is 100 MB an object)."""
    from batchinfer.pipeline.steps.merge_object import merge_object

    with account() as aws:
        plan = replace(example_plan(run_id="scale"), merge=True)
        task = json.loads(seed_split(aws, plan, 0, 10, megabytes * 10**6 // 10))
        return run_step(
            aws,
            registry.MERGE_OBJECT,
            f"one object of {megabytes:,} MB in 10 shards",
            lambda: merge_object(MergeTask(task["input"], task["output"], plan), s3=aws.s3),
            trace,
        )


def _states_seconds(starts: Iterator[int]) -> Callable[[str], float]:
    """Step Functions' charge: StartExecution beyond the token bucket waits for its refill."""

    def seconds(operation: str) -> float:
        if operation != "StartExecution" or next(starts) < STATES_START_BUCKET:
            return STATES_REQUEST_SECONDS
        return STATES_REQUEST_SECONDS + 1 / STATES_STARTS_PER_SECOND

    return seconds


def arrivals_batch(messages: int, trace: bool = True) -> Outcome:
    """The S3 trigger's Lambda on one batch of ``messages`` arrivals, 100 to a folder."""
    from batchinfer.pipeline.steps.arrivals import Trigger, start_arrivals
    from batchinfer.pipeline.storage.arrival_claims import ArrivalClaims

    with account() as aws:
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        states = boto3.client("stepfunctions", region_name=REGION)
        aws.meter.attach(dynamodb, lambda _: DYNAMODB_REQUEST_SECONDS)
        aws.meter.attach(states, _states_seconds(itertools.count()))
        machine = states.create_state_machine(
            name="runs",
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn="arn:aws:iam::123456789012:role/runs",
        )["stateMachineArn"]
        prefix = "input/arrivals/"
        trigger = Trigger(BUCKET, prefix, {"merge": True}, machine, "runs")
        records = []
        for number in range(messages):
            key = f"{prefix}day {number // 100:03}/part {number % 100:02}.csv"
            aws.s3.seed(BUCKET, key, b"1,2\n")
            event = object_created(BUCKET, key, 4, aws.s3.head_etag(BUCKET, key))
            records.append({"messageId": f"m-{number}", "body": json.dumps(event)})
        claims = ArrivalClaims(dynamodb, "runs", BUCKET)

        def left() -> int:
            return int((ARRIVALS.timeout_seconds - aws.meter.elapsed(ARRIVALS.memory_mb)) * 1e3)

        return run_step(
            aws,
            ARRIVALS,
            f"{messages:,} messages",
            lambda: start_arrivals(
                {"Records": records},
                trigger=trigger,
                states=states,
                s3=aws.s3,
                claims=claims,
                time_left_ms=left,
            ),
            trace,
        )


CASES: dict[str, Case] = {
    "plan": Case(plan_objects, 100_000, 10_000, "plan"),
    "plan_parquet": Case(partial(plan_objects, parquet=True), 100_000, 10_000, "plan"),
    "arrivals": Case(arrivals_batch, 3_000, 300, "arrivals"),
    "verify": Case(verify_round, 1_000_000, 50_000, "verify"),
    "record_failure": Case(record_failure_run, 1_000_000, 100_000, "record_failure"),
    "finalize": Case(finalize_run, 1_000_000, 50_000, "finalize"),
    "collect": Case(collect_run, 100_000, 5_000, "collect"),
    "collect_10": Case(partial(collect_run, shards_each=10), 100_000, 5_000, "collect"),
    "merge_object": Case(merge_object_run, 100, 100, "merge_object", warm_up=1),
}
