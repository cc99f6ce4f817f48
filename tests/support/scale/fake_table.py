"""The status table for the scale harness: a boto3 ``Table`` whose RUN-level calls go to moto
(few, small) and whose SHARD items, the part that grows with a run, are counted as they are
written and made up on demand when read, so a million of them cost no memory here. Every
request is charged to the meter, and the units it writes or reads count against the table's
and its partitions' rates (costs.py)."""

import itertools
import re
import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from boto3.dynamodb.conditions import ConditionExpressionBuilder

from batchinfer.pipeline.storage.status_table import (
    BATCH_WRITE_ITEMS,
    PARTITION_KEY,
    SHARD_PARTITIONS,
    SHARD_SK_PREFIX,
    SORT_KEY,
)
from tests.support.scale.costs import (
    DYNAMODB_PAGE_BYTES,
    DYNAMODB_PARTITION_READS_PER_SECOND,
    DYNAMODB_PARTITION_WRITES_PER_SECOND,
    DYNAMODB_READ_CLIENT_CPU_SECONDS,
    DYNAMODB_READ_UNIT_BYTES,
    DYNAMODB_REQUEST_SECONDS,
    DYNAMODB_TABLE_WRITES_PER_SECOND,
    DYNAMODB_WRITE_CLIENT_CPU_SECONDS,
)
from tests.support.scale.meter import Meter

# The SHARD item a run's id and a shard number name, or None past the run's last shard.
ShardItem = Callable[[str, int], dict[str, Any] | None]


class FakeTable:
    """``table`` (a moto ``Table``) for RUN items; SHARD items written are counted in
    ``shards_written``; ``shard_item(run_id, number)`` makes up the SHARD items a Query reads,
    with ``item_bytes`` the size DynamoDB would count for each (its 1 MB Query pages; a write
    of up to 1 KB is one unit)."""

    def __init__(
        self,
        table: Any,
        meter: Meter,
        shard_item: ShardItem | None = None,
        item_bytes: int = 200,
    ) -> None:
        self._table = table
        self._meter = meter
        self._shard_item = shard_item
        self._item_bytes = item_bytes
        self._lock = threading.Lock()
        self.shards_written = 0
        self.name = table.name

    def _charge(self, operation: str, client_cpu: float = 0.0) -> None:
        self._meter.charge(f"dynamodb:{operation}", DYNAMODB_REQUEST_SECONDS, client_cpu)

    def wrote_shards(self, partition_keys: list[str]) -> None:
        """Count SHARD items written under ``partition_keys`` against the table's write rate
        and each partition key's (its items share one partition)."""
        with self._lock:
            self.shards_written += len(partition_keys)
        meter = self._meter
        meter.consume(
            "dynamodb table writes", len(partition_keys), DYNAMODB_TABLE_WRITES_PER_SECOND
        )
        for key in set(partition_keys):
            meter.consume(
                f"dynamodb writes to {key}",
                partition_keys.count(key),
                DYNAMODB_PARTITION_WRITES_PER_SECOND,
            )

    def put_item(self, **params: Any) -> Any:
        self._charge("PutItem")
        if str(params["Item"].get(SORT_KEY, "")).startswith(SHARD_SK_PREFIX):
            self.wrote_shards([params["Item"][PARTITION_KEY]])
            return {}
        return self._table.put_item(**params)

    def update_item(self, **params: Any) -> Any:
        self._charge("UpdateItem")
        return self._table.update_item(**params)

    def get_item(self, **params: Any) -> Any:
        self._charge("GetItem")
        return self._table.get_item(**params)

    def delete_item(self, **params: Any) -> Any:
        self._charge("DeleteItem")
        return self._table.delete_item(**params)

    @contextmanager
    def batch_writer(self, overwrite_by_pkeys: Any = None) -> Any:
        writer = _BatchWriter(self)
        yield writer
        writer.flush()

    def query(self, **params: Any) -> dict[str, Any]:
        self._charge("Query")
        built = ConditionExpressionBuilder().build_expression(
            params["KeyConditionExpression"], is_key_condition=True
        )
        values = list(built.attribute_value_placeholders.values())
        if SHARD_SK_PREFIX not in values or self._shard_item is None:
            return self._table.query(**params)
        return self._shard_page(values[0], params)

    def _shard_page(self, partition_key: str, params: dict[str, Any]) -> dict[str, Any]:
        """One page of the made-up SHARD items under ``partition_key``: at most 1 MB of them,
        or ``Limit``, read before the filter (``Attr(name).eq(value)``) and the projection
        apply; their bytes count against the partition's read rate (a consistent read takes
        one unit for each 4 KB)."""
        run_id, partition = partition_key.rsplit("#", 1)
        after = params.get("ExclusiveStartKey")
        start = (
            int(after[SORT_KEY].removeprefix(SHARD_SK_PREFIX)) + SHARD_PARTITIONS
            if after
            else int(partition)
        )
        per_page = max(1, DYNAMODB_PAGE_BYTES // self._item_bytes)
        limit = min(params.get("Limit", per_page), per_page)
        keep = _filter(params.get("FilterExpression"))
        names = params.get("ExpressionAttributeNames", {})
        projected = (
            [names.get(n.strip(), n.strip()) for n in params["ProjectionExpression"].split(",")]
            if "ProjectionExpression" in params
            else None
        )
        items, scanned, last = [], 0, None
        for number in itertools.count(start, SHARD_PARTITIONS):
            item = self._shard_item(run_id, number)
            if item is None:
                break
            item = item | {PARTITION_KEY: partition_key}
            scanned += 1
            last = item
            if keep(item):
                items.append(item if projected is None else {k: item[k] for k in projected})
            if scanned == limit:
                break
        self._meter.consume(
            f"dynamodb reads of {partition_key}",
            scanned * self._item_bytes / DYNAMODB_READ_UNIT_BYTES,
            DYNAMODB_PARTITION_READS_PER_SECOND,
        )
        self._meter.client_cpu(len(items) * DYNAMODB_READ_CLIENT_CPU_SECONDS)
        page: dict[str, Any] = {"Items": items, "Count": len(items), "ScannedCount": scanned}
        if scanned == limit and last is not None:
            page["LastEvaluatedKey"] = {key: last[key] for key in (PARTITION_KEY, SORT_KEY)}
        return page


def _filter(condition: Any) -> Callable[[dict[str, Any]], bool]:
    """What a ``FilterExpression`` of one equality keeps."""
    if condition is None:
        return lambda item: True
    built = ConditionExpressionBuilder().build_expression(condition)
    match = re.fullmatch(r"(#\w+) = (:\w+)", built.condition_expression)
    if match is None:
        raise NotImplementedError(f"filter {built.condition_expression!r}: only one equality")
    name = built.attribute_name_placeholders[match[1]]
    value = built.attribute_value_placeholders[match[2]]
    return lambda item: item.get(name) == value


class _BatchWriter:
    """boto3's ``batch_writer``: puts sent 25 to a BatchWriteItem."""

    def __init__(self, table: FakeTable) -> None:
        self._table = table
        self._pending: list[str] = []  # the partition keys of the items not sent yet

    def put_item(self, Item: dict[str, Any]) -> None:
        self._pending.append(Item[PARTITION_KEY])
        if len(self._pending) == BATCH_WRITE_ITEMS:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            cpu = len(self._pending) * DYNAMODB_WRITE_CLIENT_CPU_SECONDS
            self._table._charge("BatchWriteItem", cpu)
            self._table.wrote_shards(self._pending)
            self._pending = []
