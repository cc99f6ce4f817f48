"""The run status table (DynamoDB): one ``RUN`` item per run and one ``SHARD#<n>`` per shard.

Keys: ``run_id`` (partition) and ``sk``. RUN items also carry ``run_status`` and
``started_at``, the keys of the ``by-status`` index, so the index lists runs only.
A run's SHARD items are spread over :data:`SHARD_PARTITIONS` partition keys,
``<run id>#<shard number modulo 16>`` (a run id has no ``#``): DynamoDB takes at most 1,000
writes a second on one partition, so a million items under one key would take 1,000 s to
write; shards written in order take the keys in turn, and the table's own rate (4,000 a second
for a new on-demand table) bounds them instead (docs/scaling.md).
Every write to a RUN item after Plan is conditioned on ``execution_arn``: only the
execution that owns a run can change it, so a second execution with the same run id can
never overwrite the first one's record. A run id is claimed only by a request Plan
accepted: a REJECTED item (a request that failed before Plan accepted it) gives way to the
next request with that id, and Plan run again by the execution that claimed the id finds
its own run. The run-finished announcement is claimed on the RUN item before it is sent,
so a step run again after it announced does not announce again.
"""

import time
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from batchinfer.errors import BatchInferError

PARTITION_KEY = "run_id"
SORT_KEY = "sk"
RUN_SK = "RUN"
SHARD_SK_PREFIX = "SHARD#"
STATUS_INDEX = "by-status"
STATUS_INDEX_PARTITION = "run_status"
STATUS_INDEX_SORT = "started_at"
TTL_ATTRIBUTE = "expires_at"

RUNNING = "RUNNING"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
ABORTED = "ABORTED"  # stopped on purpose: the execution or one of its jobs
REJECTED = "REJECTED"  # the request failed before Plan accepted it; the id is not taken
PENDING = "PENDING"
MISSING = "MISSING"
RUN_STATUSES = (RUNNING, SUCCEEDED, FAILED, ABORTED, REJECTED)
ANNOUNCED_PREFIX = "announced_"  # + the channel: event, sns
# A RUN item's ``admission`` while it waits for instances and once it holds them, and the
# attribute naming the instance type it leases (instance_leases.py).
WAITING_FOR_INSTANCES = "waiting for instances"
ADMITTED = "instances leased"
INSTANCE_LEASE = "instance_lease"
# On a RUN item from the failure recorder's first write until it has announced the end: a
# retry of the end-of-run rule's recording finishes it instead of leaving a closed run alone.
RECORDING_FAILURE = "recording_failure"


class RunAlreadyExists(BatchInferError):
    """A run with this id exists: a second start must neither redo nor overwrite it."""


class NotRunOwner(BatchInferError):
    """The run belongs to another execution (or does not exist)."""


# Partition keys a run's SHARD items are spread over, and threads writing them: four
# 25-item requests at once offer about 10,000 writes a second, more than a new on-demand
# table takes (4,000); boto3 sends again what DynamoDB leaves unprocessed, and botocore
# retries a throttled request with backoff.
SHARD_PARTITIONS = 16
SHARD_WRITE_THREADS = 4
BATCH_WRITE_ITEMS = 25  # BatchWriteItem takes at most 25 puts a request


def shard_sk(number: int) -> str:
    return f"{SHARD_SK_PREFIX}{number:05d}"


def shard_partition(run_id: str, number: int) -> str:
    """The partition key of shard ``number``'s item (for a number under
    :data:`SHARD_PARTITIONS`, that partition's key)."""
    return f"{run_id}#{number % SHARD_PARTITIONS}"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def condition_failed(exc: ClientError) -> bool:
    """Whether DynamoDB refused a conditional write because its condition did not hold."""
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def _attr(name: str) -> Any:
    """boto3's condition on attribute ``name``. boto3 is imported on first use, not by every
    command that imports this module: it is a tenth of a second of their start."""
    from boto3.dynamodb.conditions import Attr

    return Attr(name)


def _key(name: str) -> Any:
    """boto3's condition on key ``name`` (imported on first use, as :func:`_attr`)."""
    from boto3.dynamodb.conditions import Key

    return Key(name)


@dataclass
class StatusTable:
    """Access to the status table through a boto3 ``Table`` resource."""

    table: Any
    record_days: int = 365

    @classmethod
    def named(cls, name: str, record_days: int = 365, session: Any = None) -> "StatusTable":
        import boto3

        return cls((session or boto3).resource("dynamodb").Table(name), record_days)

    def _expiry(self) -> int:
        return int(time.time()) + self.record_days * 86400

    def create_run(self, run_id: str, execution_arn: str, **attributes: Any) -> dict[str, Any]:
        """Write the RUN item of a new run; :class:`RunAlreadyExists` if another execution
        holds the id (a REJECTED request holds none; this execution holds its own)."""
        item = {
            PARTITION_KEY: run_id,
            SORT_KEY: RUN_SK,
            STATUS_INDEX_PARTITION: RUNNING,
            STATUS_INDEX_SORT: now(),
            "execution_arn": execution_arn,
            TTL_ATTRIBUTE: self._expiry(),
            **attributes,
        }
        try:
            self.table.put_item(
                Item=item,
                ConditionExpression=_attr(PARTITION_KEY).not_exists()
                | _attr(STATUS_INDEX_PARTITION).eq(REJECTED)
                | _attr("execution_arn").eq(execution_arn),
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            existing = self.get_run(run_id) or {}
            raise RunAlreadyExists(
                f"run_id: run {run_id!r} already exists (status "
                f"{existing.get(STATUS_INDEX_PARTITION, 'unknown')}, started "
                f"{existing.get(STATUS_INDEX_SORT, 'unknown')} by "
                f"{existing.get('execution_arn', 'unknown')}); start with another run_id"
            ) from None
        return item

    def update_run(
        self,
        run_id: str,
        execution_arn: str,
        attributes: Mapping[str, Any],
        *,
        create: bool = False,
        only_if_running: bool = False,
    ) -> None:
        """Set ``attributes`` on the RUN item owned by ``execution_arn``.

        ``create`` also allows writing a RUN item that does not exist yet or was REJECTED (a
        request that failed before Plan recorded it); ``only_if_running`` leaves finished
        runs alone.
        """
        # boto3's condition builder names its own placeholders #n<i> and :v<i>.
        names = {f"#attr{i}": key for i, key in enumerate(attributes)}
        values = {f":val{i}": value for i, value in enumerate(attributes.values())}
        sets = ", ".join(f"#attr{i} = :val{i}" for i in range(len(attributes)))
        condition = _attr("execution_arn").eq(execution_arn)
        if only_if_running:
            condition &= _attr(STATUS_INDEX_PARTITION).eq(RUNNING)
        if create:
            condition |= _attr(PARTITION_KEY).not_exists() | _attr(STATUS_INDEX_PARTITION).eq(
                REJECTED
            )
            names |= {"#exp": TTL_ATTRIBUTE, "#owner": "execution_arn"}
            names["#started"] = STATUS_INDEX_SORT
            values |= {":exp": self._expiry(), ":owner": execution_arn, ":started": now()}
            sets += (
                ", #exp = if_not_exists(#exp, :exp), #owner = :owner"
                ", #started = if_not_exists(#started, :started)"
            )
        try:
            self.table.update_item(
                Key={PARTITION_KEY: run_id, SORT_KEY: RUN_SK},
                UpdateExpression=f"SET {sets}",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ConditionExpression=condition,
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            raise NotRunOwner(
                f"run {run_id!r}: not updated; it belongs to another execution than "
                f"{execution_arn}, or it has finished"
            ) from None

    def claim_announcement(self, run_id: str, execution_arn: str, channel: str) -> bool:
        """Mark the run's end as announced on ``channel``; False when it already was (by an
        earlier try of the same step) or the run is another execution's."""
        attribute = ANNOUNCED_PREFIX + channel
        try:
            self.table.update_item(
                Key={PARTITION_KEY: run_id, SORT_KEY: RUN_SK},
                UpdateExpression="SET #announced = :at",
                ExpressionAttributeNames={"#announced": attribute},
                ExpressionAttributeValues={":at": now()},
                ConditionExpression=_attr("execution_arn").eq(execution_arn)
                & _attr(attribute).not_exists(),
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return False
        return True

    def release_announcement(self, run_id: str, execution_arn: str, channel: str) -> None:
        """Undo :meth:`claim_announcement` after a send failed, so a retry sends it."""
        self.table.update_item(
            Key={PARTITION_KEY: run_id, SORT_KEY: RUN_SK},
            UpdateExpression="REMOVE #announced",
            ExpressionAttributeNames={"#announced": ANNOUNCED_PREFIX + channel},
            ConditionExpression=_attr("execution_arn").eq(execution_arn),
        )

    def mark_waiting(
        self, run_id: str, execution_arn: str, waiting_for: str, instance_type: str
    ) -> str:
        """Show the run as waiting for instances (``admission``, ``waiting_for``) and answer
        since when it has waited (``waiting_since``, kept from the first wait). Its
        ``instance_lease`` names the type whose queue holds it, which the failure recorder
        leaves."""
        answer = self._update_owned(
            run_id,
            execution_arn,
            "SET #admission = :waiting, #for = :for, #since = if_not_exists(#since, :now), "
            "#lease = :type",
            {
                "#admission": "admission",
                "#for": "waiting_for",
                "#since": "waiting_since",
                "#lease": INSTANCE_LEASE,
            },
            {
                ":waiting": WAITING_FOR_INSTANCES,
                ":for": waiting_for,
                ":now": now(),
                ":type": instance_type,
            },
            ReturnValues="ALL_NEW",
        )
        return answer["Attributes"]["waiting_since"]

    def mark_admitted(self, run_id: str, execution_arn: str, instance_type: str) -> None:
        """Show the run as holding instances of ``instance_type`` (``instance_lease``, which
        the failure recorder releases) and no longer waiting."""
        self._update_owned(
            run_id,
            execution_arn,
            "SET #admission = :admitted, #lease = :type REMOVE #since, #for",
            {
                "#admission": "admission",
                "#lease": INSTANCE_LEASE,
                "#since": "waiting_since",
                "#for": "waiting_for",
            },
            {":admitted": ADMITTED, ":type": instance_type},
        )

    def _update_owned(
        self,
        run_id: str,
        execution_arn: str,
        expression: str,
        names: dict[str, str],
        values: dict[str, Any],
        **kwargs: Any,
    ) -> dict[str, Any]:
        """One UpdateItem of the RUN item owned by ``execution_arn`` (:class:`NotRunOwner`
        otherwise)."""
        try:
            return self.table.update_item(
                Key={PARTITION_KEY: run_id, SORT_KEY: RUN_SK},
                UpdateExpression=expression,
                ExpressionAttributeNames={**names, "#owner": "execution_arn"},
                ExpressionAttributeValues={**values, ":owner": execution_arn},
                ConditionExpression="#owner = :owner",
                **kwargs,
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            raise NotRunOwner(
                f"run {run_id!r}: not updated; it belongs to another execution than {execution_arn}"
            ) from None

    def put_shard(self, run_id: str, number: int, attributes: Mapping[str, Any]) -> None:
        self.table.put_item(Item=self._shard_item(run_id, number, attributes))

    @contextmanager
    def shard_writer(self, run_id: str) -> Iterator[Callable[[int, Mapping[str, Any]], None]]:
        """A ``put(number, attributes)`` that writes SHARD items of ``run_id`` 25 a
        BatchWriteItem, :data:`SHARD_WRITE_THREADS` requests at a time, with a bounded number
        waiting; all are written when the block ends (the first failure is raised there or by
        a later ``put``). Items replace those with the same keys, so writing them again
        changes nothing."""
        batch: list[dict[str, Any]] = []
        sent: deque[Future[None]] = deque()
        with ThreadPoolExecutor(SHARD_WRITE_THREADS, thread_name_prefix="shard-writes") as pool:

            def send() -> None:
                sent.append(pool.submit(self._write_items, batch.copy()))
                batch.clear()
                if len(sent) > 2 * SHARD_WRITE_THREADS:
                    sent.popleft().result()

            def put(number: int, attributes: Mapping[str, Any]) -> None:
                batch.append(self._shard_item(run_id, number, attributes))
                if len(batch) == BATCH_WRITE_ITEMS:
                    send()

            yield put
            if batch:
                send()
            while sent:
                sent.popleft().result()

    def _write_items(self, items: list[dict[str, Any]]) -> None:
        """One BatchWriteItem of ``items`` (boto3's writer sends again what is unprocessed)."""
        with self.table.batch_writer() as writer:
            for item in items:
                writer.put_item(Item=item)

    def _shard_item(
        self, run_id: str, number: int, attributes: Mapping[str, Any]
    ) -> dict[str, Any]:
        return {
            PARTITION_KEY: shard_partition(run_id, number),
            SORT_KEY: shard_sk(number),
            "shard": number,
            TTL_ATTRIBUTE: self._expiry(),
            **attributes,
        }

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        response = self.table.get_item(
            Key={PARTITION_KEY: run_id, SORT_KEY: RUN_SK}, ConsistentRead=True
        )
        return response.get("Item")

    def shards(self, run_id: str) -> list[dict[str, Any]]:
        """The SHARD items of a run in shard order."""
        items = self._shard_query(run_id, ConsistentRead=True)
        return sorted(items, key=lambda item: item["shard"])

    def shard_records(self, run_id: str, *, set_aside: bool = False) -> tuple[array, ...]:
        """``records_in`` and ``records_out`` of the run's shards by number (-1: not
        counted, or no item), and with ``set_aside`` ``records_quarantined`` too: arrays of
        8 bytes a shard, filled a Query page at a time with only those fields, so a run of a
        million shards takes 16 MB (24 MB)."""
        counts = ("records_in", "records_out", *(["records_quarantined"] if set_aside else []))
        arrays = tuple(array("q") for _ in counts)
        items = self._shard_query(
            run_id,
            ProjectionExpression="#shard, " + ", ".join(counts),
            ExpressionAttributeNames={"#shard": "shard"},
            ConsistentRead=True,
        )
        for item in items:
            number = int(item["shard"])
            if number >= len(arrays[0]):
                missing = array("q", [-1]) * (number + 1 - len(arrays[0]))
                for values in arrays:
                    values.extend(missing)
            for values, key in zip(arrays, counts, strict=True):
                values[number] = int(item.get(key, -1))
        return arrays

    def shards_with_status(
        self, run_id: str, status: str, *, most: int, read: int, page: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """The ``shard`` and ``name`` of the lowest-numbered SHARD items of the run whose
        status is ``status``, up to ``most``, found reading at most ``read`` items: an equal
        share of each partition key's first items (the lowest numbers), ``page`` a request
        (Query's ``Limit`` counts the items read before the filter:
        https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Query.Other.html);
        and whether more may have that status (items left unread, or more than ``most``)."""
        share = max(1, read // SHARD_PARTITIONS)
        found: list[dict[str, Any]] = []
        unread = False
        for partition in range(SHARD_PARTITIONS):
            kwargs: dict[str, Any] = {
                "KeyConditionExpression": self._shard_keys(run_id, partition),
                "FilterExpression": _attr("status").eq(status),
                "ProjectionExpression": "#shard, #name",
                "ExpressionAttributeNames": {"#shard": "shard", "#name": "name"},
                "ConsistentRead": True,
            }
            left, here = share, 0
            while True:
                answer = self.table.query(Limit=min(page, left), **kwargs)
                left -= answer["ScannedCount"]
                here += len(answer.get("Items", []))
                found.extend(answer.get("Items", []))
                if "LastEvaluatedKey" not in answer:
                    break
                if left <= 0 or here > most:  # the rest of this key has higher numbers
                    unread = True
                    break
                kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        found.sort(key=lambda item: int(item["shard"]))
        return found[:most], unread or len(found) > most

    def remove_run_attribute(self, run_id: str, execution_arn: str, attribute: str) -> None:
        """Remove ``attribute`` from the RUN item owned by ``execution_arn``."""
        self._update_owned(
            run_id, execution_arn, "REMOVE #attribute", {"#attribute": attribute}, {}
        )

    def runs(self, status: str, limit: int | None = None) -> list[dict[str, Any]]:
        """RUN items with ``status``, newest first (through the ``by-status`` index)."""
        if status not in RUN_STATUSES:
            raise BatchInferError(f"status: {status!r} is not one of {', '.join(RUN_STATUSES)}")
        items = self._query(
            IndexName=STATUS_INDEX,
            KeyConditionExpression=_key(STATUS_INDEX_PARTITION).eq(status),
            ScanIndexForward=False,
        )
        result = []
        for item in items:
            result.append(item)
            if limit is not None and len(result) >= limit:
                break
        return result

    def _shard_query(self, run_id: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """The SHARD items of a run, one partition key after another."""
        for partition in range(SHARD_PARTITIONS):
            yield from self._query(
                KeyConditionExpression=self._shard_keys(run_id, partition), **kwargs
            )

    @staticmethod
    def _shard_keys(run_id: str, partition: int) -> Any:
        return _key(PARTITION_KEY).eq(shard_partition(run_id, partition)) & _key(
            SORT_KEY
        ).begins_with(SHARD_SK_PREFIX)

    def _query(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        while True:
            page = self.table.query(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
