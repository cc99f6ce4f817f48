"""Leases on a budget of concurrent SageMaker instances per instance type, held in the
status table so that every run of the stack draws on the same budget.

One item per instance type (``run_id`` = ``INSTANCES#<type>``, ``sk`` = ``LEASES``): a map
``leases`` from a lease key (the run id: a run runs one job at a time) to ``{"count",
"execution", "round", "expires_at"}``, and a ``version``. Acquiring reads the item, leaves
out leases past their ``expires_at`` (their run is gone: the backstop when nothing released
them), and writes the new lease conditioned on the version it read, so of two acquirers
that raced one wins and the other reads again. A key that already holds a live lease is
granted without taking more (a step run again); releasing removes the key, so releasing
twice returns the instances once.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from batchinfer.pipeline.status_table import PARTITION_KEY, SORT_KEY

LEASES_PARTITION_PREFIX = "INSTANCES#"
LEASES_SK = "LEASES"
# Conditional writes lost to other acquirers before a poll gives up (and waits).
ATTEMPTS = 20


@dataclass(frozen=True)
class Grant:
    """The answer to an acquire: whether the lease is held, and the instances of the type
    leased when it was decided (this lease included when granted)."""

    granted: bool
    in_use: int
    budget: int


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
        leases, _ = self._read(instance_type)
        now = self.clock()
        return {k: v for k, v in leases.items() if v["expires_at"] > now}

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
    ) -> Grant:
        """Lease ``count`` instances of ``instance_type`` under ``key`` if the budget has room;
        not granted when it has none (or other acquirers won every write)."""
        used = 0
        for _ in range(ATTEMPTS):
            leases, version = self._read(instance_type)
            now = self.clock()
            live = {k: v for k, v in leases.items() if v["expires_at"] > now}
            used = sum(int(v["count"]) for v in live.values())
            if key in live:
                return Grant(True, used, budget)
            if used + count > budget:
                return Grant(False, used, budget)
            lease = {
                "count": count,
                "execution": execution,
                "round": round_number,
                "expires_at": int(now) + lease_seconds,
            }
            expired = [k for k in leases if k not in live and k != key]
            if self._write(instance_type, key, lease, expired, version):
                return Grant(True, used + count, budget)
        return Grant(False, used, budget)

    def release(self, instance_type: str, key: str) -> bool:
        """Return the instances leased under ``key``; False when it held none (released
        already, expired and dropped, or never granted)."""
        try:
            self.table.update_item(
                Key=self.key_of(instance_type),
                UpdateExpression="REMOVE #leases.#key",
                ExpressionAttributeNames={"#leases": "leases", "#key": key},
                ConditionExpression="attribute_exists(#leases.#key)",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def _read(self, instance_type: str) -> tuple[dict[str, dict[str, Any]], int | None]:
        """The leases and the version (None: no item yet), read consistently."""
        item = self.table.get_item(Key=self.key_of(instance_type), ConsistentRead=True).get("Item")
        if item is None:
            return {}, None
        return dict(item.get("leases", {})), int(item["version"])

    def _write(
        self,
        instance_type: str,
        key: str,
        lease: dict[str, Any],
        expired: list[str],
        version: int | None,
    ) -> bool:
        """Write ``lease`` (dropping ``expired``) if the item is still at ``version``."""
        try:
            if version is None:
                self.table.put_item(
                    Item={**self.key_of(instance_type), "leases": {key: lease}, "version": 1},
                    ConditionExpression=Attr(PARTITION_KEY).not_exists(),
                )
                return True
            names = {"#leases": "leases", "#key": key, "#version": "version"}
            names |= {f"#expired{i}": name for i, name in enumerate(expired)}
            removes = ", ".join(f"#leases.#expired{i}" for i in range(len(expired)))
            self.table.update_item(
                Key=self.key_of(instance_type),
                UpdateExpression="SET #leases.#key = :lease, #version = :next"
                + (f" REMOVE {removes}" if removes else ""),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":lease": lease, ":next": version + 1, ":read": version},
                ConditionExpression="#version = :read",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return False
        return True
