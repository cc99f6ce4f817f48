"""Admission across runs in the synthesized state machine: five runs at once on a budget of
8 instances, 4 each, never have more than 8 in flight, are admitted in the order they began
to wait and all succeed; a run asking for more
than the budget fails with InstancesUnavailable; a failed run returns its instances. The
history events of the Wait loop and of the rest of a run are counted here against the bounds
the config validation uses (stacks/execution_history.py)."""

import itertools
import threading
import time

from batchinfer.pipeline.storage.instance_leases import InstanceLeases
from batchinfer.pipeline.storage.status_table import (
    ADMITTED,
    FAILED,
    SUCCEEDED,
    WAITING_FOR_INSTANCES,
    StatusTable,
)
from stacks.config import load_config
from stacks.execution_history import (
    EVENTS_OUTSIDE_ROUNDS,
    EVENTS_PER_ROUND,
    EVENTS_PER_WAIT,
    history_allowance,
    longest_history,
)
from tests.support.offline import ApiError, Execution, OfflineStack

from .conftest import ADMISSION, BUDGET, INSTANCE_TYPE, REPO_ROOT, RETRY
from .test_happy_path import csv_rows

RUNS = 5
PER_RUN = 4


def _leases(stack: OfflineStack) -> InstanceLeases:
    return InstanceLeases(StatusTable.named(stack.table_name).table)


def _wait_until_all_wait(stack: OfflineStack, run_ids: list[str], timeout: float = 180.0) -> None:
    """Until every run's RUN item says it waits for instances."""
    table = StatusTable.named(stack.table_name)
    deadline = time.monotonic() + timeout
    while True:
        items = [table.get_run(run_id) or {} for run_id in run_ids]
        if all(item.get("admission") == WAITING_FOR_INSTANCES for item in items):
            for item in items:
                assert item["waiting_for"] == f"{PER_RUN} x {INSTANCE_TYPE}"
                assert item["waiting_since"] >= item["started_at"]
            return
        assert time.monotonic() < deadline, f"not all waiting: {items}"
        time.sleep(0.2)


def wait_turns(execution: Execution) -> list[list[str]]:
    """The history event types of each turn of the Wait loop: from an AcquireInstances that
    was not granted up to the next AcquireInstances."""
    starts = [
        i
        for i, e in enumerate(execution.history)
        if e.get("stateEnteredEventDetails", {}).get("name") == "AcquireInstances"
    ]
    turns = []
    for start, end in itertools.pairwise(starts):
        entered = {
            e["stateEnteredEventDetails"]["name"]
            for e in execution.history[start:end]
            if "stateEnteredEventDetails" in e
        }
        if "WaitForInstances" in entered and "RunJob" not in entered:
            turns.append([e["type"] for e in execution.history[start:end]])
    return turns


def _granted_in_order(monkeypatch) -> list[str]:
    """The keys leases are written for, in the order the writes happened (each recorded
    with its write, under one lock)."""
    granted: list[str] = []
    lock = threading.Lock()
    write = InstanceLeases._write

    def recorded(self, instance_type, item, sets, removes):
        with lock:
            written = write(self, instance_type, item, sets, removes)
            if written:
                granted.extend(key for field, key in sets if field == "leases")
        return written

    monkeypatch.setattr(InstanceLeases, "_write", recorded)
    return granted


def test_five_runs_share_a_budget_of_eight_and_all_succeed(stack, monkeypatch):
    """Another user holds the whole budget while the five runs start, so every run waits;
    then each job needs 4 of the 8: at most two run at a time, granted in the order the
    runs began to wait."""
    granted = _granted_in_order(monkeypatch)
    held = _leases(stack)
    assert held.acquire(
        INSTANCE_TYPE, "other", BUDGET, BUDGET, execution="x", round_number=1, lease_seconds=600
    ).granted
    run_ids = [f"shared-{n}" for n in range(RUNS)]
    arns = []
    for n, run_id in enumerate(run_ids):
        stack.put(f"input/{run_id}/rows.csv", csv_rows(40, offset=100 * n))
        request = {
            "input": f"s3://{stack.bucket}/input/{run_id}/",
            "run_id": run_id,
            "shards": 2,
            "instance_count": PER_RUN,
        }
        arns.append(stack.start(request, f"exec-{run_id}"))
    _wait_until_all_wait(stack, run_ids)
    assert stack.jobs.started == [], "no job starts while the budget is held"
    queue = held.queue(INSTANCE_TYPE)
    assert sorted(queue) == run_ids
    assert held.release(INSTANCE_TYPE, "other")

    executions = [stack.wait(arn, timeout=600) for arn in arns]
    for execution in executions:
        assert execution.status == "SUCCEEDED", execution.cause
    assert len(stack.jobs.started) == RUNS
    assert [key for key in granted if key in run_ids] == queue, "first come, first served"
    assert held.queue(INSTANCE_TYPE) == []
    assert stack.jobs.most_in_flight[INSTANCE_TYPE] <= BUDGET
    assert stack.jobs.in_flight[INSTANCE_TYPE] == 0
    assert held.held(INSTANCE_TYPE) == {}, "every run returned its instances"
    table = StatusTable.named(stack.table_name)
    for run_id in run_ids:
        item = table.get_run(run_id)
        assert item["run_status"] == SUCCEEDED and item["records_out"] == 40
        assert item["admission"] == ADMITTED and "waiting_since" not in item
    _, events = stack.announced()
    assert sorted(e["detail"]["run_id"] for e in events) == run_ids

    # The history: each turn of the Wait loop, and everything else of a run.
    turns = [turn for execution in executions for turn in wait_turns(execution)]
    assert turns, "every run waited at least one turn"
    longest = max(turns, key=len)
    assert len(longest) <= EVENTS_PER_WAIT, longest
    for execution in executions:
        names = execution.states_entered()
        waits, rounds = names.count("WaitForInstances"), names.count("RunJob")
        rest = len(execution.history) - waits * EVENTS_PER_WAIT
        assert rest <= EVENTS_OUTSIDE_ROUNDS + rounds * EVENTS_PER_ROUND, (
            len(execution.history),
            waits,
            rounds,
        )


def test_the_longest_allowed_wait_stays_well_inside_the_execution_history():
    """The e2e stack's admission and the shipped environments: every round waiting as long
    as allowed, with every job retry, stays within the share of the 25,000 events."""
    e2e = longest_history(
        max_rounds=3,
        retry_attempts=RETRY["max_attempts"],
        max_wait_seconds=ADMISSION["max_wait_minutes"] * 60,
        poll_seconds=ADMISSION["poll_seconds"],
    )
    assert e2e <= history_allowance() < 25_000
    context = __import__("app").cdk_json_context()
    for env in ("dev", "prod"):
        config = load_config(context, env, REPO_ROOT)
        events = longest_history(
            max_rounds=config.max_rounds,
            retry_attempts=config.retry.max_attempts,
            max_wait_seconds=config.admission.max_wait_minutes * 60,
            poll_seconds=config.admission.poll_seconds,
        )
        assert events <= history_allowance(), env


def test_a_run_asking_for_more_than_the_budget_fails_with_instances_unavailable(stack):
    stack.put("input/big/rows.csv", csv_rows(10))
    request = {
        "input": f"s3://{stack.bucket}/input/big/",
        "run_id": "too-big",
        "instance_count": BUDGET + 1,
    }
    execution = stack.run(request, "exec-too-big")
    assert execution.status == "FAILED"
    assert execution.error == "InstancesUnavailable"
    assert f"{BUDGET + 1} x {INSTANCE_TYPE}" in execution.cause
    assert stack.jobs.started == []
    run = StatusTable.named(stack.table_name).get_run("too-big")
    assert run["run_status"] == FAILED and run["error"] == "InstancesUnavailable"


def test_a_run_that_fails_after_leasing_returns_its_instances(stack):
    """The job is refused for good (PermanentApiError): the failure path, not
    ReleaseInstances, returns the lease."""
    stack.put("input/refused/rows.csv", csv_rows(10))
    stack.jobs.faults.append(ApiError("ValidationException", "The instance type is refused"))
    request = {"input": f"s3://{stack.bucket}/input/refused/", "run_id": "refused"}
    execution = stack.run(request, "exec-refused")
    assert execution.status == "FAILED"
    names = execution.states_entered()
    assert "AcquireInstances" in names and "ReleaseInstances" not in names
    assert _leases(stack).held(INSTANCE_TYPE) == {}
