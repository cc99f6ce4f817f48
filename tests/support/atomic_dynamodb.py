"""moto's DynamoDB checks a write's ConditionExpression and then applies the write with
nothing to keep another thread out in between, so two conditional writes racing in threads
can both pass their condition; and it applies an update's actions to the stored item one by
one, so a read in another thread can see half of it (a new version without the lease written
with it). It also keeps a table's items in a ``defaultdict`` by partition key, so two
threads writing the first items of one key at once can each make its dict, and the items
written to the one replaced are lost (a run's SHARD items, written by four threads over 16
keys, came back 2 short of 20,000). DynamoDB never allows any of these: a write to an item,
its condition included, is atomic, and a read sees it whole or not at all. While
:func:`atomic_writes` is open, moto's item writes and reads run one at a time, as DynamoDB's
do for one item (the offline stack, whose executions run in threads, keeps it open, as do
the scale tests, whose writers write from threads; ``tests/integration/pipeline/
test_instance_leases.py`` shows the first two divergences)."""

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from moto.dynamodb.models import DynamoDBBackend

WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")
READS = ("get_item", "batch_get_item", "query", "scan")


@contextmanager
def atomic_writes() -> Iterator[None]:
    """moto's DynamoDB item writes and reads one at a time while open."""
    lock = threading.RLock()

    def atomic(name: str) -> Any:
        original = getattr(DynamoDBBackend, name)

        def write(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
            with lock:
                return original(self, *args, **kwargs)

        return write

    with ExitStack() as stack:
        for name in (*WRITES, *READS):
            stack.enter_context(mock.patch.object(DynamoDBBackend, name, atomic(name)))
        yield
