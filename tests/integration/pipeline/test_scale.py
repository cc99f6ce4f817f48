"""Runs of 100,000 input objects: Plan lists them all into the split Map's JSON Lines item
file, Collect turns the shard lists the splits answered (and the shard indexes of those that
listed none) into the shard list, the SHARD items and the first ManifestFile; Collect run
again writes the same. The helpers they rely on: an ordered
thread map with bounded work in flight, and SHARD items in shard order past 99,999."""

import json
import threading
import time
from collections import Counter
from unittest import mock

import pytest
from botocore.exceptions import ClientError

from batchinfer.pipeline.contract.state import Round
from batchinfer.pipeline.steps.collect import collect
from batchinfer.pipeline.steps.plan import plan_run
from batchinfer.pipeline.storage.ordered import ordered_map
from batchinfer.pipeline.storage.status_table import PENDING, RUNNING, StatusTable
from batchinfer.sharding.names import index_name
from tests.support.atomic_dynamodb import atomic_writes
from tests.support.many_objects import (
    object_name,
    put_directly,
    put_inputs,
    split_state,
    stored_shard_items,
)
from tests.support.run_state import example_plan

from .conftest import BUCKET

EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:scale"
OBJECTS = 100_000


@pytest.mark.slow
def test_plan_lists_100k_objects_into_one_item_line_each(account):
    put_inputs(BUCKET, "input/big/", OBJECTS)
    put_directly(BUCKET, "input/big/", b"")  # a folder marker is no input
    plan = plan_run(
        {"input": f"s3://{BUCKET}/input/big/", "run_id": "big"},
        execution=EXECUTION,
        execution_name="scale",
        started_at="2025-01-01T00:00:00Z",
        env=account.env,
        s3=account.s3,
        sagemaker=account.sagemaker,
        table=account.table,
    )
    assert (plan.objects, plan.bytes) == (OBJECTS, 4 * OBJECTS)
    tasks = account.json_lines(f"s3://{BUCKET}/{plan.inputs_key}")
    assert [task["input"] for task in tasks] == [
        f"s3://{BUCKET}/input/big/{object_name(number)}" for number in range(OBJECTS)
    ]
    assert tasks[-1]["output"] == f"s3://{BUCKET}/shards/big/099/"
    run = account.table.get_run("big")
    assert (run["objects"], run["bytes"], run["run_status"]) == (OBJECTS, 4 * OBJECTS, RUNNING)


def split_run(account, run_id: str, objects: int, **shards):
    """A run of ``objects`` inputs as the split Map leaves it (``split_state``), with its
    RUN item; its plan and the key of the split Map's result manifest."""
    plan = example_plan(run_id=run_id)
    account.table.create_run(run_id, EXECUTION, objects=objects)
    return plan, split_state(plan, objects, account.s3, **shards)


def index_reads(s3) -> list[str]:
    """The keys of the shard indexes ``s3`` reads from now on, as they are read."""
    read: list[str] = []

    def record(params, **_):
        if params["Key"].endswith(".index.json"):
            read.append(params["Key"])

    s3.meta.events.register("provide-client-params.s3.GetObject", record)
    return read


@pytest.mark.slow
def test_collect_gathers_100k_objects_in_order_with_batched_shard_items(account):
    """The splits' shard lists come from the split Map's result files (answers in another
    order than the tasks); only the objects whose answer listed none have their index read."""
    plan, splits = split_run(
        account,
        "big",
        OBJECTS,
        unsplit={0, 77_777},
        two={5, OBJECTS - 1},
        unlisted={5, 50_000, OBJECTS - 1},
    )
    indexes = index_reads(account.s3)
    with atomic_writes():
        round_ = collect(
            plan, execution=EXECUTION, splits=splits, s3=account.s3, table=account.table
        )
    assert sorted(indexes) == [
        "shards/big/" + index_name(object_name(number)) for number in (5, 50_000, OBJECTS - 1)
    ]
    total = OBJECTS + 2
    manifest_uri = f"s3://{BUCKET}/runs/big/round-1.manifest"
    assert round_ == Round(1, manifest_uri, False, total, total, "runs/big/shards.jsonl")
    shards = account.json_lines(f"s3://{BUCKET}/runs/big/shards.jsonl")
    assert [shard["number"] for shard in shards] == list(range(total))
    assert shards[6] == {
        "number": 6,
        "name": "000/part-000005.part-00001.csv",
        "input": f"s3://{BUCKET}/input/000/part-000005.csv",
        "input_name": "000/part-000005.csv",
        "size": 4,
        "compression": "None",
    }
    manifest = json.loads(account.get(round_.manifest))
    assert manifest[0] == {"prefix": f"s3://{BUCKET}/shards/big/"}
    assert manifest[1:] == [shard["name"] for shard in shards]
    unsplit = "shards/big/077/part-077777.csv"
    assert unsplit not in account.keys(unsplit), "copied by its split Map item, not by Collect"
    items = stored_shard_items(account.table.table, "big")
    assert [item["shard"] for item in items] == list(range(total)), "in order past 99,999"
    assert {(item["status"], item["attempts"]) for item in items} == {(PENDING, 0)}
    assert items[-1]["name"] == "099/part-099999.part-00001.csv"
    assert account.table.get_run("big")["shards"] == total


def test_collect_run_again_writes_the_same_objects_and_items(account):
    """A retried Collect (its answer lost after it ran) leaves the same run behind; 60
    objects with two shards each fill several 25-item batches."""
    plan, splits = split_run(
        account, "again", 60, unsplit={3}, two=set(range(60)) - {3}, unlisted={7}
    )
    with atomic_writes():
        first = collect(
            plan, execution=EXECUTION, splits=splits, s3=account.s3, table=account.table
        )
    written = {key: account.get(f"s3://{BUCKET}/{key}") for key in account.keys("")}
    items = account.table.shards("again")
    assert stored_shard_items(account.table.table, "again") == items  # as the scale test reads
    with atomic_writes():
        second = collect(
            plan, execution=EXECUTION, splits=splits, s3=account.s3, table=account.table
        )
    assert second == first and first.shards == 119
    assert {key: account.get(f"s3://{BUCKET}/{key}") for key in account.keys("")} == written
    strip = [{k: v for k, v in item.items() if k != "expires_at"} for item in items]
    again = account.table.shards("again")
    assert [{k: v for k, v in item.items() if k != "expires_at"} for item in again] == strip


def test_collect_of_an_execution_started_before_the_splits_were_passed_reads_every_index(
    account,
):
    """An execution keeps the definition it started under, while a deploy updates the
    Lambdas: its Collect event has no ``splits``, and every shard index is read instead, to
    the same shard list."""
    plan, splits = split_run(account, "older", 30, unsplit={3}, two={4, 29})
    indexes = index_reads(account.s3)
    older = collect(plan, execution=EXECUTION, splits=None, s3=account.s3, table=account.table)
    assert len(indexes) == 30
    shard_list = account.get(f"s3://{BUCKET}/runs/older/shards.jsonl")
    assert (
        collect(plan, execution=EXECUTION, splits=splits, s3=account.s3, table=account.table)
        == older
    )
    assert account.get(f"s3://{BUCKET}/runs/older/shards.jsonl") == shard_list
    assert len(indexes) == 30, "read from the Map's results the second time"


def test_shard_items_come_back_in_shard_order_past_five_digits(account):
    for number in (100_001, 5, 99_999, 100_000):
        account.table.put_shard("wide", number, {"status": PENDING})
    assert [item["shard"] for item in account.table.shards("wide")] == [5, 99_999, 100_000, 100_001]


def test_a_run_s_shard_items_spread_over_16_partition_keys_written_from_threads(account):
    """DynamoDB takes at most 1,000 writes a second under one partition key: a million SHARD
    items under the run id alone would take 1,000 s to write. Shards written in order take
    the 16 keys in turn, their requests sent by the writer's pool."""
    writers, write_items = set(), StatusTable._write_items

    def recorded(table, items):
        writers.add(threading.current_thread().name.rsplit("_", 1)[0])
        write_items(table, items)

    with (
        atomic_writes(),
        mock.patch.object(StatusTable, "_write_items", recorded),
        account.table.shard_writer("spread") as put,
    ):
        for number in range(1_000):
            put(number, {"status": PENDING})
    assert writers == {"shard-writes"}
    keys = Counter(item["run_id"] for item in account.table.table.scan()["Items"])
    assert keys == {f"spread#{k}": 63 if k < 1_000 % 16 else 62 for k in range(16)}
    assert [item["shard"] for item in account.table.shards("spread")] == list(range(1_000))


def test_a_shard_write_that_fails_is_raised_where_the_writer_ends(account):
    """A request DynamoDB refuses (here: no such table) is raised where the writer ends,
    not lost in its pool."""
    missing = StatusTable.named("no-such-table")
    with (
        pytest.raises(ClientError, match="ResourceNotFoundException"),
        missing.shard_writer("lost") as put,
    ):
        for number in range(100):
            put(number, {"status": PENDING})


def test_ordered_map_keeps_input_order_with_bounded_work_in_flight():
    lock, started, finished, most = threading.Lock(), [0], [0], [0]

    def slow_square(number: int) -> int:
        with lock:
            started[0] += 1
            most[0] = max(most[0], started[0] - finished[0])
        time.sleep(0.001 * (number % 3))  # later items often finish first
        with lock:
            finished[0] += 1
        return number * number

    results = []
    for result in ordered_map(slow_square, iter(range(200)), workers=4, ahead=8):
        results.append(result)
        with lock:
            assert started[0] - len(results) <= 8, "no more than `ahead` items wait"
    assert results == [number * number for number in range(200)]
    assert most[0] <= 4


def test_ordered_map_raises_the_first_error_at_its_item():
    def fail_at_three(number: int) -> int:
        if number == 3:
            raise ValueError(f"item {number}")
        return number

    seen = []
    with pytest.raises(ValueError, match="item 3"):
        for result in ordered_map(fail_at_three, range(100), workers=2):
            seen.append(result)
    assert seen == [0, 1, 2]
