"""Leases on a budget of concurrent SageMaker instances per instance type, held in the
status table so that every run of the stack draws on the same budget, and the queue of the
runs waiting for them.

One item per instance type (``run_id`` = ``INSTANCES#<type>``, ``sk`` = ``LEASES``): a map
``leases`` from a lease key (the run id: a run runs one job at a time) to ``{"count",
"execution", "round", "expires_at"}``, a map ``waiting`` from the key of each run without
room to ``{"count", "since_ms", "expires_at"}``, and a ``version``. Acquiring reads the
item, leaves out leases and waiters past their ``expires_at`` (their run is gone: the
backstop when nothing released them), and writes conditioned on the version it read, so of
two acquirers that raced one wins and the other reads again. Runs are admitted first come,
first served: a run is granted only when the budget has room and no live waiter asked
before it (``since_ms``, then the key), so a large run is not passed over for ever by small
ones that happen to ask just after instances come back. A run not granted joins the queue,
or refreshes its place there (its ``since_ms`` kept, its ``expires_at`` pushed on). A key
that already holds a live lease is granted without taking more (a step run again);
releasing removes the key from both maps, so releasing twice returns the instances once.

A run's job leases under its run id; each of its split jobs under its own key,
:func:`split_key` (the run id, ``#split#`` and a digest of the object), so the failure
recorder can return every split lease of a run by that prefix (:meth:`release_all`).
"""

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from batchinfer.pipeline.storage.status_table import PARTITION_KEY, SORT_KEY, condition_failed

LEASES_PARTITION_PREFIX = "INSTANCES#"
LEASES_SK = "LEASES"
# Conditional writes lost to other acquirers before a poll gives up (and waits).
ATTEMPTS = 20
# How long a waiter keeps its place without asking again, unless the caller says.
DEFAULT_WAIT_SECONDS = 600
SPLIT_MARK = "#split#"


def split_key(run_id: str, object_uri: str) -> str:
    """The lease key of the split job of ``object_uri`` in run ``run_id``."""
    return split_prefix(run_id) + hashlib.sha256(object_uri.encode()).hexdigest()[:16]


def split_prefix(run_id: str) -> str:
    """What the lease keys of every split job of run ``run_id`` start with."""
    return run_id + SPLIT_MARK


@dataclass(frozen=True)
class Grant:
    """The answer to an acquire: whether the lease is held, the instances of the type
    leased when it was decided (this lease included when granted), and how many waiting
    runs are ahead of a run not granted and since when (epoch ms) it has waited."""

    granted: bool
    in_use: int
    budget: int
    ahead: int = 0
    since_ms: int | None = None


@dataclass
class InstanceLeases:
    """The leases of the status table behind a boto3 ``Table`` resource."""

    table: Any
    clock: Callable[[], float] = time.time

    @staticmethod
    def key_of(instance_type: str) -> dict[str, str]:
        return {PARTITION_KEY: LEASES_PARTITION_PREFIX + instance_type, SORT_KEY: LEASES_SK}

    def held(self, instance_type: str) -> dict[str, dict[str, Any]]:
        """The live leases of ``instance_type`` by key."""
        return _live(self._read(instance_type).leases, self.clock())

    def queue(self, instance_type: str) -> list[str]:
        """The keys of the live waiters of ``instance_type``, first come first."""
        return _in_order(_live(self._read(instance_type).waiting, self.clock()))

    def acquire(
        self,
        instance_type: str,
        key: str,
        count: int,
        budget: int,
        *,
        execution: str,
        round_number: int,
        lease_seconds: int,
        wait_seconds: int = DEFAULT_WAIT_SECONDS,
    ) -> Grant:
        """Lease ``count`` instances of ``instance_type`` under ``key`` if the budget has room
        and no run waits ahead of it; otherwise queue ``key`` (its place kept for
        ``wait_seconds`` from now: longer than a waiting run takes to ask again) and say how
        many are ahead. Not granted either when other acquirers won every write."""
        used, ahead = 0, 0
        for _ in range(ATTEMPTS):
            item = self._read(instance_type)
            now = self.clock()
            live = _live(item.leases, now)
            used = sum(int(v["count"]) for v in live.values())
            if key in live:
                return Grant(True, used, budget)
            queue = _live(item.waiting, now)
            since_ms = int(queue[key]["since_ms"]) if key in queue else int(now * 1000)
            ahead = sum(1 for k, v in queue.items() if (int(v["since_ms"]), k) < (since_ms, key))
            stale = _stale(item, live, queue, key)
            if used + count <= budget and not ahead:
                lease = {
                    "count": count,
                    "execution": execution,
                    "round": round_number,
                    "expires_at": int(now) + lease_seconds,
                }
                removes = [*stale, ("waiting", key)] if key in item.waiting else stale
                if self._write(instance_type, item, {("leases", key): lease}, removes):
                    return Grant(True, used + count, budget)
                continue
            waiter = {"count": count, "since_ms": since_ms, "expires_at": int(now) + wait_seconds}
            if self._write(instance_type, item, {("waiting", key): waiter}, stale):
                return Grant(False, used, budget, ahead, since_ms)
        return Grant(False, used, budget, ahead)

    def release(self, instance_type: str, key: str) -> bool:
        """Return the instances leased under ``key`` and take it out of the queue; False when
        it held none (released already, expired and dropped, or never granted)."""
        self._remove_if_there(instance_type, "waiting", key)
        return self._remove_if_there(instance_type, "leases", key)

    def release_all(self, instance_type: str, prefix: str) -> list[str]:
        """Release every key of ``instance_type`` that starts with ``prefix`` (leased or
        waiting); the keys whose lease this returned."""
        item = self._read(instance_type)
        for key in [k for k in item.waiting if k.startswith(prefix)]:
            self._remove_if_there(instance_type, "waiting", key)
        return [
            key
            for key in item.leases
            if key.startswith(prefix) and self._remove_if_there(instance_type, "leases", key)
        ]

    def _remove_if_there(self, instance_type: str, field: str, key: str) -> bool:
        try:
            self.table.update_item(
                Key=self.key_of(instance_type),
                UpdateExpression="REMOVE #field.#key",
                ExpressionAttributeNames={"#field": field, "#key": key},
                ConditionExpression="attribute_exists(#field.#key)",
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return False
        return True

    def _read(self, instance_type: str) -> "_Item":
        """The item, read consistently (version None: there is none yet)."""
        item = self.table.get_item(Key=self.key_of(instance_type), ConsistentRead=True).get("Item")
        if item is None:
            return _Item({}, {}, None, has_waiting=False)
        waiting = item.get("waiting")
        return _Item(
            dict(item.get("leases", {})),
            dict(waiting or {}),
            int(item["version"]),
            has_waiting=waiting is not None,
        )

    def _write(
        self,
        instance_type: str,
        item: "_Item",
        sets: dict[tuple[str, str], dict[str, Any]],
        removes: list[tuple[str, str]],
    ) -> bool:
        """Set and remove entries of the maps (``(map, key)``) if the item is still at the
        version read."""
        try:
            if item.version is None:
                new: dict[str, dict[str, Any]] = {"leases": {}, "waiting": {}}
                for (field, key), value in sets.items():
                    new[field][key] = value
                self.table.put_item(
                    Item={**self.key_of(instance_type), **new, "version": 1},
                    ConditionExpression=Attr(PARTITION_KEY).not_exists(),
                )
                return True
            names = {"#version": "version"}
            values: dict[str, Any] = {":next": item.version + 1, ":read": item.version}
            assignments = ["#version = :next"]
            if not item.has_waiting:  # an item written before waiters were queued
                assignments.append("#waiting = :waiting")
                values[":waiting"] = {k: v for (f, k), v in sets.items() if f == "waiting"}
            for number, ((field, key), value) in enumerate(sets.items()):
                if field == "waiting" and not item.has_waiting:
                    continue
                names[f"#set{number}"] = key
                values[f":set{number}"] = value
                assignments.append(f"#{field}.#set{number} = :set{number}")
            deletions = []
            for number, (field, key) in enumerate(removes):
                if field == "waiting" and not item.has_waiting:
                    continue
                names[f"#del{number}"] = key
                deletions.append(f"#{field}.#del{number}")
            expression = "SET " + ", ".join(assignments)
            if deletions:
                expression += " REMOVE " + ", ".join(deletions)
            names |= {f"#{f}": f for f in ("leases", "waiting") if f"#{f}" in expression}
            self.table.update_item(
                Key=self.key_of(instance_type),
                UpdateExpression=expression,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ConditionExpression="#version = :read",
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return False
        return True


@dataclass(frozen=True)
class _Item:
    leases: dict[str, dict[str, Any]]
    waiting: dict[str, dict[str, Any]]
    version: int | None
    has_waiting: bool


def _live(entries: dict[str, dict[str, Any]], now: float) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in entries.items() if v["expires_at"] > now}


def _in_order(queue: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(queue, key=lambda k: (int(queue[k]["since_ms"]), k))


def _stale(
    item: _Item, live: dict[str, Any], queue: dict[str, Any], key: str
) -> list[tuple[str, str]]:
    """The expired entries of both maps (``key``'s own left to the write that sets it)."""
    return [("leases", k) for k in item.leases if k not in live and k != key] + [
        ("waiting", k) for k in item.waiting if k not in queue and k != key
    ]
