"""Instance leases in the status table (moto DynamoDB): the budget holds under racing
acquirers, runs are admitted first come first served, expired leases and places in the
queue give way, a step run again takes and returns its instances once, and the admission
steps and the failure recorder use them."""

import threading
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from moto.dynamodb.parsing.executors import UpdateExpressionExecutor

from batchinfer.pipeline.contract.run_errors import InstancesUnavailable
from batchinfer.pipeline.steps.acquire_instances import acquire_instances
from batchinfer.pipeline.steps.acquire_split_instance import acquire_split_instance
from batchinfer.pipeline.steps.record_failure import record_ended_execution, record_failure
from batchinfer.pipeline.steps.release_instances import release_instances
from batchinfer.pipeline.steps.release_split_instance import release_split_instance
from batchinfer.pipeline.storage.instance_leases import InstanceLeases, split_key
from batchinfer.pipeline.storage.status_table import ADMITTED, WAITING_FOR_INSTANCES
from tests.support.atomic_dynamodb import atomic_writes
from tests.support.run_state import example_plan, example_round

TYPE = "ml.m5.xlarge"
EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:"
HOUR = 3600


class Clock:
    """A settable time.time."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _acquire(leases, key, count=4, budget=8, seconds=HOUR):
    return leases.acquire(
        TYPE, key, count, budget, execution=EXECUTION + key, round_number=1, lease_seconds=seconds
    )


def test_the_budget_is_shared_and_returned(account):
    leases = InstanceLeases(account.table.table)
    assert _acquire(leases, "a").granted and _acquire(leases, "b").granted
    refused = _acquire(leases, "c")
    assert not refused.granted and refused.in_use == 8
    assert leases.release(TYPE, "a")
    granted = _acquire(leases, "c")
    assert granted.granted and granted.in_use == 8
    assert set(leases.held(TYPE)) == {"b", "c"}


def test_other_instance_types_have_budgets_of_their_own(account):
    leases = InstanceLeases(account.table.table)
    assert _acquire(leases, "a", count=8).granted
    other = leases.acquire(
        "ml.c5.xlarge", "b", 8, 8, execution=EXECUTION + "b", round_number=1, lease_seconds=HOUR
    )
    assert other.granted


def test_acquiring_twice_takes_the_instances_once(account):
    leases = InstanceLeases(account.table.table)
    assert _acquire(leases, "a").granted
    again = _acquire(leases, "a")
    assert again.granted and again.in_use == 4
    assert _acquire(leases, "b").granted, "the repeated acquire took nothing more"
    assert sum(int(v["count"]) for v in leases.held(TYPE).values()) == 8


def test_releasing_twice_returns_the_instances_once(account):
    leases = InstanceLeases(account.table.table)
    _acquire(leases, "a")
    _acquire(leases, "b")
    assert leases.release(TYPE, "a") is True
    assert leases.release(TYPE, "a") is False
    assert set(leases.held(TYPE)) == {"b"}
    assert leases.release("ml.c5.large", "a") is False, "no item for that type at all"


def test_a_lease_whose_run_is_gone_expires(account):
    clock = Clock()
    leases = InstanceLeases(account.table.table, clock)
    assert _acquire(leases, "gone", count=8, seconds=HOUR).granted
    assert not _acquire(leases, "next").granted
    clock.now += HOUR + 1
    assert leases.held(TYPE) == {}
    assert _acquire(leases, "next").granted
    item = account.table.table.get_item(Key=InstanceLeases.key_of(TYPE))["Item"]
    assert set(item["leases"]) == {"next"}, "the acquire dropped the expired lease"


def test_runs_are_admitted_first_come_first_served(account):
    """b and then c wait while a holds the budget; when a releases, c happens to ask first
    but b asked before it: c is not granted until b is."""
    clock = Clock()
    leases = InstanceLeases(account.table.table, clock)
    assert _acquire(leases, "a", count=8).granted
    first = _acquire(leases, "b")
    clock.now += 10
    second = _acquire(leases, "c")
    assert (first.granted, first.ahead, second.granted, second.ahead) == (False, 0, False, 1)
    assert leases.queue(TYPE) == ["b", "c"]
    assert leases.release(TYPE, "a")
    clock.now += 10
    passed_over = _acquire(leases, "c")
    assert not passed_over.granted and passed_over.ahead == 1 and passed_over.in_use == 0
    assert _acquire(leases, "b").granted
    assert _acquire(leases, "c").granted
    assert leases.queue(TYPE) == [] and set(leases.held(TYPE)) == {"b", "c"}


def test_a_large_run_is_not_passed_over_by_small_ones(account):
    """A run asking for the whole budget waits for both leases to end; a small run asking
    after it waits behind it even while 4 instances are free."""
    clock = Clock()
    leases = InstanceLeases(account.table.table, clock)
    assert _acquire(leases, "a").granted and _acquire(leases, "b").granted
    assert not _acquire(leases, "big", count=8).granted
    clock.now += 1
    assert leases.release(TYPE, "a")
    small = _acquire(leases, "small")
    assert not small.granted and small.in_use == 4 and small.ahead == 1
    assert not _acquire(leases, "big", count=8).granted, "b still holds 4"
    assert leases.release(TYPE, "b")
    assert _acquire(leases, "big", count=8).granted
    assert not _acquire(leases, "small").granted, "now the budget is full"


def test_a_waiter_that_stopped_asking_loses_its_place(account):
    """b's run is gone (aborted while it waited): once its place has expired it holds
    nobody back, and the next write drops it."""
    clock = Clock()
    leases = InstanceLeases(account.table.table, clock)
    assert _acquire(leases, "a", count=8).granted
    assert not leases.acquire(
        TYPE, "b", 4, 8, execution="x", round_number=1, lease_seconds=HOUR, wait_seconds=100
    ).granted
    assert leases.release(TYPE, "a")
    clock.now += 101
    assert leases.queue(TYPE) == []
    assert _acquire(leases, "c").granted
    item = account.table.table.get_item(Key=InstanceLeases.key_of(TYPE))["Item"]
    assert item["waiting"] == {}, "the expired place was dropped"


def test_releasing_a_waiting_run_takes_it_out_of_the_queue(account):
    leases = InstanceLeases(account.table.table)
    _acquire(leases, "a", count=8)
    _acquire(leases, "b")
    assert leases.queue(TYPE) == ["b"]
    assert leases.release(TYPE, "b") is False, "it held no instances"
    assert leases.queue(TYPE) == []


def test_an_item_written_before_runs_were_queued_takes_waiters(account):
    """A stack updated from a version without the queue: its item has no waiting map."""
    table = account.table.table
    lease = {"count": 8, "execution": "x", "round": 1, "expires_at": 2_000_000_000}
    table.put_item(Item={**InstanceLeases.key_of(TYPE), "leases": {"old": lease}, "version": 3})
    leases = InstanceLeases(table)
    assert not _acquire(leases, "b").granted
    assert leases.queue(TYPE) == ["b"]
    assert leases.release(TYPE, "old")
    assert _acquire(leases, "b").granted and leases.queue(TYPE) == []


def test_a_write_that_lost_the_race_reads_again_and_sees_the_winner(account):
    """Between this acquirer's read and its write another one takes the last instances:
    the conditional write fails, the second read sees them taken, the lease is refused."""
    table = account.table.table
    rival = InstanceLeases(table)
    _acquire(rival, "first", count=4)

    class RacingTable:
        def __init__(self) -> None:
            self.raced = False

        def get_item(self, **kwargs):
            answer = table.get_item(**kwargs)
            if not self.raced:
                self.raced = True
                assert _acquire(rival, "rival", count=4).granted
            return answer

        def __getattr__(self, name):
            return getattr(table, name)

    racing = RacingTable()
    refused = _acquire(InstanceLeases(racing), "late", count=4)
    assert racing.raced and not refused.granted and refused.in_use == 8
    assert set(InstanceLeases(table).held(TYPE)) == {"first", "rival"}


def test_racing_acquirers_never_pass_the_budget(account):
    """Twelve threads ask for 4 of a budget of 8 at once: exactly two get them."""
    table = account.table.table
    results = {}
    start = threading.Barrier(12)

    def ask(key: str) -> None:
        start.wait()
        results[key] = _acquire(InstanceLeases(table), key).granted

    threads = [threading.Thread(target=ask, args=(f"run-{i}",)) for i in range(12)]
    with atomic_writes():
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    granted = sorted(k for k, ok in results.items() if ok)
    assert len(granted) == 2
    assert sorted(InstanceLeases(table).held(TYPE)) == granted


@pytest.mark.parametrize("atomic", [True, False])
def test_moto_lets_a_racing_conditional_write_through_unless_writes_are_atomic(account, atomic):
    """A rival acquirer writes while the first is between its condition check and its
    update (moto's UpdateExpressionExecutor): moto alone applies both and passes the
    budget; DynamoDB, and moto under atomic_writes, makes the rival read again."""
    table = account.table.table
    _acquire(InstanceLeases(table), "first", count=1)  # the item exists, version 1
    original = UpdateExpressionExecutor.execute
    rival: list[threading.Thread] = []
    outcome = {}

    def execute(self, node=None):
        if not rival:  # the first acquirer's update, its condition already checked
            rival.append(threading.Thread(target=lambda: outcome.update(
                rival=_acquire(InstanceLeases(table), "rival", count=4).granted
            )))  # fmt: skip
            rival[0].start()
            # Without the lock the rival ends here; with it, it waits for this write.
            rival[0].join(timeout=1 if atomic else None)
        return original(self, node)

    with ExitStack() as stack:
        if atomic:
            stack.enter_context(atomic_writes())
        stack.enter_context(mock.patch.object(UpdateExpressionExecutor, "execute", execute))
        outcome["first"] = _acquire(InstanceLeases(table), "late", count=4).granted
        rival[0].join()
    in_use = sum(int(v["count"]) for v in InstanceLeases(table).held(TYPE).values())
    if atomic:
        assert outcome == {"first": True, "rival": False}, "the rival read again: no room"
        assert in_use == 5
    else:
        assert outcome == {"first": True, "rival": True}, "both passed the same condition"
        assert in_use == 9, "over the budget of 8"


@pytest.mark.parametrize("atomic", [True, False])
def test_moto_lets_a_read_see_half_an_update_unless_writes_are_atomic(account, atomic):
    """A consistent read while an acquirer's update is half applied (moto's
    UpdateExpressionExecutor sets the version and the lease one after the other): moto alone
    answers the item with one and not the other, so a rival would count the budget without
    the lease yet write on the new version; DynamoDB, and moto under atomic_writes, answers
    the item once the whole update is in."""
    table = account.table.table
    _acquire(InstanceLeases(table), "first", count=1)  # the item exists, version 1
    original = UpdateExpressionExecutor.execute
    reader: list[threading.Thread] = []
    seen = {}

    def read():
        item = table.get_item(Key=InstanceLeases.key_of(TYPE), ConsistentRead=True)["Item"]
        seen.update(version=int(item["version"]), lease="late" in item["leases"])

    def execute(self, node=None):
        action = node is not None and self.get_specific_execution(node) is not None
        original(self, node)
        if action and not reader:  # one action of the update applied, the other not yet
            reader.append(threading.Thread(target=read))
            reader[0].start()
            # Without the lock the read ends here; with it, it waits for the whole write.
            reader[0].join(timeout=1 if atomic else None)

    with ExitStack() as stack:
        if atomic:
            stack.enter_context(atomic_writes())
        stack.enter_context(mock.patch.object(UpdateExpressionExecutor, "execute", execute))
        assert _acquire(InstanceLeases(table), "late", count=4).granted
        reader[0].join()
    if atomic:
        assert seen == {"version": 2, "lease": True}, "the whole update"
    else:
        assert (seen["version"] == 2) != seen["lease"], f"half of it: {seen}"


# --- the admission steps ---


def _env(account, **changes):
    admission = {
        "instance_budget": {"ml.m5.xlarge": 8},
        "admission_max_wait_seconds": HOUR,
        "lease_seconds": 2 * HOUR,
    }
    return replace(account.env, **(admission | changes))


def _plan(run_id, count=4):
    return example_plan(run_id=run_id, instance_type=TYPE, instance_count=count)


def test_a_run_without_room_waits_visibly_then_is_admitted(account):
    clock = Clock(datetime(2026, 11, 1, tzinfo=UTC).timestamp())
    env = _env(account)
    for run_id in ("a", "b", "c"):
        account.table.create_run(run_id, EXECUTION + run_id)
    for run_id in ("a", "b"):
        admission = acquire_instances(
            _plan(run_id), example_round(), execution=EXECUTION + run_id, env=env,
            table=account.table, clock=clock,
        )  # fmt: skip
        assert admission.granted
    waiting = acquire_instances(
        _plan("c"), example_round(), execution=EXECUTION + "c", env=env, table=account.table,
        clock=clock,
    )  # fmt: skip
    assert not waiting.granted and waiting.in_use == 8 and waiting.budget == 8
    item = account.table.get_run("c")
    assert item["admission"] == WAITING_FOR_INSTANCES and item["waiting_for"] == "4 x " + TYPE
    assert item["waiting_since"] == waiting.waiting_since
    assert release_instances(_plan("a"), table=account.table)
    admitted = acquire_instances(
        _plan("c"), example_round(), execution=EXECUTION + "c", env=env, table=account.table,
        clock=clock,
    )  # fmt: skip
    assert admitted.granted
    item = account.table.get_run("c")
    assert item["admission"] == ADMITTED and item["instance_lease"] == TYPE
    assert "waiting_since" not in item


def test_waiting_past_the_bound_fails_with_instances_unavailable(account):
    env = _env(account)
    account.table.create_run("hog", EXECUTION + "hog")
    account.table.create_run("late", EXECUTION + "late")
    acquire_instances(
        _plan("hog", 8), example_round(), execution=EXECUTION + "hog", env=env, table=account.table
    )
    first = acquire_instances(
        _plan("late"), example_round(), execution=EXECUTION + "late", env=env, table=account.table
    )
    since = datetime.fromisoformat(first.waiting_since)
    later = Clock((since + timedelta(seconds=HOUR + 1)).timestamp())
    with pytest.raises(InstancesUnavailable, match=r"run late: waited 3601 s .* 4 x ml\.m5"):
        acquire_instances(
            _plan("late"), example_round(), execution=EXECUTION + "late", env=env,
            table=account.table, clock=later,
        )  # fmt: skip
    assert InstanceLeases(account.table.table, later).queue(TYPE) == [], "its place is given up"


def test_a_run_asking_more_than_the_whole_budget_fails_at_once(account):
    account.table.create_run("big", EXECUTION + "big")
    with pytest.raises(InstancesUnavailable, match=r"instance_count: .* 9 x ml\.m5\.xlarge.* 8"):
        acquire_instances(
            _plan("big", 9), example_round(), execution=EXECUTION + "big", env=_env(account),
            table=account.table,
        )  # fmt: skip


def test_types_without_a_budget_of_their_own_take_the_default(account):
    env = _env(account, default_instance_budget=1)
    assert env.budget_for("ml.c5.large") == 1 and env.budget_for(TYPE) == 8


def test_a_failed_run_returns_its_instances(account):
    env = _env(account)
    account.table.create_run("r", EXECUTION + "r")
    acquire_instances(
        _plan("r", 8), example_round(), execution=EXECUTION + "r", env=env, table=account.table
    )
    state = {"plan": _plan("r", 8).to_state(), "error": {"Error": "States.Timeout", "Cause": "x"}}
    record_failure(
        state, execution=EXECUTION + "r", execution_name="r", **account.failure_clients()
    )
    assert InstanceLeases(account.table.table).held(TYPE) == {}


def test_a_run_that_fails_while_it_waits_leaves_the_queue(account):
    """Stopped while it waited: the runs behind it do not wait for its place to expire."""
    env = _env(account)
    for run_id in ("hog", "w"):
        account.table.create_run(run_id, EXECUTION + run_id)
    acquire_instances(
        _plan("hog", 8), example_round(), execution=EXECUTION + "hog", env=env, table=account.table
    )
    acquire_instances(
        _plan("w"), example_round(), execution=EXECUTION + "w", env=env, table=account.table
    )
    leases = InstanceLeases(account.table.table)
    assert leases.queue(TYPE) == ["w"]
    state = {"plan": _plan("w").to_state(), "error": {"Error": "States.Timeout", "Cause": "x"}}
    record_failure(
        state, execution=EXECUTION + "w", execution_name="w", **account.failure_clients()
    )
    assert leases.queue(TYPE) == [] and set(leases.held(TYPE)) == {"hog"}


def test_an_aborted_execution_returns_its_instances(account):
    env = _env(account)
    account.table.create_run("stop", EXECUTION + "stop")
    acquire_instances(
        _plan("stop"), example_round(), execution=EXECUTION + "stop", env=env, table=account.table
    )
    event = {
        "detail-type": "Step Functions Execution Status Change",
        "detail": {
            "name": "stop",
            "status": "ABORTED",
            "executionArn": EXECUTION + "stop",
            "input": '{"input": "s3://b/input/", "run_id": "stop"}',
        },
    }
    record_ended_execution(event, **account.failure_clients())
    assert InstanceLeases(account.table.table).held(TYPE) == {}


def test_an_endpoint_run_takes_no_instances_from_the_budget(account):
    env = _env(account)
    account.table.create_run("hog", EXECUTION + "hog")
    acquire_instances(
        _plan("hog", 8), example_round(), execution=EXECUTION + "hog", env=env, table=account.table
    )
    account.table.create_run("scored", EXECUTION + "scored")
    plan = replace(_plan("scored", 8), engine="endpoint")
    admission = acquire_instances(
        plan, example_round(), execution=EXECUTION + "scored", env=env, table=account.table
    )
    assert admission.granted and admission.instance_count == 0, "the budget is full, yet granted"
    assert "instance_lease" not in account.table.get_run("scored")


def _split_job(run_id):
    return {"base": f"bi-{run_id}", "run_id": run_id, "arguments": []}


def test_split_jobs_lease_from_the_budget_their_run_shares(account):
    """A run's job of 4 and two split jobs of 1 on a budget of 5 (scaling.md): the second
    split job waits, then runs once the first returned its instance; each object has a
    lease of its own, returned once however often it is released."""
    env = _env(account, split_instance_type=TYPE, instance_budget={TYPE: 5})
    account.table.create_run("r", EXECUTION + "r")
    acquire_instances(
        _plan("r"), example_round(), execution=EXECUTION + "r", env=env, table=account.table
    )
    first = acquire_split_instance(
        _split_job("r"), "s3://b/input/r/a.gz", execution=EXECUTION, env=env, table=account.table
    )
    assert first.granted and first.in_use == 5 and first.instance_type == TYPE
    second = acquire_split_instance(
        _split_job("r"), "s3://b/input/r/b.gz", execution=EXECUTION, env=env, table=account.table
    )
    assert not second.granted and second.waiting_since is not None
    assert release_split_instance(
        _split_job("r"), "s3://b/input/r/a.gz", env=env, table=account.table
    )
    assert not release_split_instance(
        _split_job("r"), "s3://b/input/r/a.gz", env=env, table=account.table
    ), "released once"
    second = acquire_split_instance(
        _split_job("r"), "s3://b/input/r/b.gz", execution=EXECUTION, env=env, table=account.table
    )
    assert second.granted
    leases = InstanceLeases(account.table.table)
    assert set(leases.held(TYPE)) == {"r", split_key("r", "s3://b/input/r/b.gz")}


def test_a_split_job_waiting_past_the_bound_fails_naming_its_object(account):
    """Its place in the queue (kept while it asks again within ``queue_seconds``) says since
    when it waits."""
    env = _env(account, split_instance_type=TYPE, admission_max_wait_seconds=100)
    assert _acquire(InstanceLeases(account.table.table), "hog", count=8).granted
    first = acquire_split_instance(
        _split_job("r"), "s3://b/input/r/a.gz", execution=EXECUTION, env=env, table=account.table
    )
    since = datetime.fromisoformat(first.waiting_since)
    later = Clock((since + timedelta(seconds=101)).timestamp())
    assert env.queue_seconds > 101, "it kept its place"
    with pytest.raises(InstancesUnavailable, match=r"split job of s3://b/input/r/a\.gz waited 101"):
        acquire_split_instance(
            _split_job("r"), "s3://b/input/r/a.gz", execution=EXECUTION, env=env,
            table=account.table, clock=later,
        )  # fmt: skip
    assert InstanceLeases(account.table.table, later).queue(TYPE) == []


def test_a_failed_run_returns_the_leases_of_its_split_jobs(account):
    """The failure recorder returns every split lease of the run, held or queued, and
    leaves other runs' alone."""
    env = _env(account, split_instance_type=TYPE, instance_budget={TYPE: 2})
    account.table.create_run("r", EXECUTION + "r")
    for run_id, name in (("r", "a"), ("other", "a"), ("r", "b")):
        acquire_split_instance(
            _split_job(run_id), f"s3://b/input/{run_id}/{name}.gz", execution=EXECUTION,
            env=env, table=account.table,
        )  # fmt: skip
    leases = InstanceLeases(account.table.table)
    assert leases.queue(TYPE) == [split_key("r", "s3://b/input/r/b.gz")]
    state = {"plan": _plan("r").to_state(), "error": {"Error": "States.Timeout", "Cause": "x"}}
    record_failure(
        state, execution=EXECUTION + "r", execution_name="r",
        **(account.failure_clients() | {"env": env}),
    )  # fmt: skip
    assert set(leases.held(TYPE)) == {split_key("other", "s3://b/input/other/a.gz")}
    assert leases.queue(TYPE) == []
