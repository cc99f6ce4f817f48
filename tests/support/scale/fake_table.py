"""The status table for the scale harness: a boto3 ``Table`` whose RUN-level calls go to moto
(few, small) and whose SHARD items, the part that grows with a run, are counted as they are
written and made up on demand when read, so a million of them cost no memory here. Every
request is charged to the meter (costs.py)."""

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from boto3.dynamodb.conditions import ConditionExpressionBuilder

from batchinfer.pipeline.storage.status_table import PARTITION_KEY, SHARD_SK_PREFIX, SORT_KEY
from tests.support.scale.costs import DYNAMODB_PAGE_BYTES, DYNAMODB_REQUEST_SECONDS
from tests.support.scale.meter import Meter

BATCH_ITEMS = 25  # BatchWriteItem takes at most 25 puts a request


class FakeTable:
    """``table`` (a moto ``Table``) for RUN items; SHARD items written are counted in
    ``shards_written``; ``shard_items(run_id, first)`` makes up the SHARD items a Query reads
    (from shard number ``first`` on), with
    ``item_bytes`` the size DynamoDB would count for each (its 1 MB Query pages)."""

    def __init__(
        self,
        table: Any,
        meter: Meter,
        shard_items: Callable[[str, int], Iterator[dict[str, Any]]] | None = None,
        item_bytes: int = 200,
    ) -> None:
        self._table = table
        self._meter = meter
        self._shard_items = shard_items
        self._item_bytes = item_bytes
        self.shards_written = 0
        self.name = table.name

    def _charge(self, operation: str) -> None:
        self._meter.charge(f"dynamodb:{operation}", DYNAMODB_REQUEST_SECONDS)

    def put_item(self, **params: Any) -> Any:
        self._charge("PutItem")
        if str(params["Item"].get(SORT_KEY, "")).startswith(SHARD_SK_PREFIX):
            self.shards_written += 1
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
    def batch_writer(self, overwrite_by_pkeys: Any = None) -> Iterator["_BatchWriter"]:
        writer = _BatchWriter(self)
        yield writer
        writer.flush()

    def query(self, **params: Any) -> dict[str, Any]:
        self._charge("Query")
        built = ConditionExpressionBuilder().build_expression(
            params["KeyConditionExpression"], is_key_condition=True
        )
        values = list(built.attribute_value_placeholders.values())
        if SHARD_SK_PREFIX not in values or self._shard_items is None:
            return self._table.query(**params)
        return self._shard_page(values[0], params)

    def _shard_page(self, run_id: str, params: dict[str, Any]) -> dict[str, Any]:
        """One page of made-up SHARD items: at most 1 MB of them, or ``Limit``, read
        before the filter (``Attr(name).eq(value)``) and the projection apply."""
        after = params.get("ExclusiveStartKey")
        start = int(after[SORT_KEY].removeprefix(SHARD_SK_PREFIX)) + 1 if after else 0
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
        for item in self._shard_items(run_id, start):
            scanned += 1
            last = item
            if keep(item):
                items.append(item if projected is None else {k: item[k] for k in projected})
            if scanned == limit:
                break
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
        self._pending = 0

    def put_item(self, Item: dict[str, Any]) -> None:
        self._pending += 1
        self._table.shards_written += 1
        if self._pending == BATCH_ITEMS:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._table._charge("BatchWriteItem")
            self._pending = 0
