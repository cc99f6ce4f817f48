"""Which run of the S3 trigger takes each arrived object, in the status table.

An object version (its key and the sequencer of the PUT that made it) is claimed by one run:
an ``ARRIVAL#<s3 uri>`` item whose sort key is the version names the run. A run's record
(``<run id>`` / ``ARRIVALS``) keeps its request and objects, so any later delivery of one
of its arrivals starts exactly that run. A run starts only once every object it names is
claimed by it (``started``); a run of which another run took an object is ``abandoned``
and gives its claims back. The two are exclusive, each written under a condition on the
other, so no object is in two started runs whatever the grouping of the deliveries.
"""

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from batchinfer.pipeline.storage.status_table import (
    PARTITION_KEY,
    SORT_KEY,
    TTL_ATTRIBUTE,
    condition_failed,
)

CLAIM_PREFIX = "ARRIVAL#"
RUN_RECORD_SK = "ARRIVALS"
STARTED = "started"
ABANDONED = "abandoned"
# BatchGetItem reads at most 100 items a request.
_BATCH_GET = 100
# Claims and records outlive every delivery of their messages (SQS keeps one 14 days at most).
KEEP_DAYS = 30

Version = tuple[str, str]  # (key, version)


@dataclass(frozen=True)
class ArrivalRun:
    """A run of arrivals: its name (the execution's and the run id), its request and the
    object versions it takes."""

    name: str
    request: dict[str, Any]
    objects: tuple[Version, ...]


@dataclass(frozen=True)
class ArrivalClaims:
    """The claims in the status table ``table_name`` through a DynamoDB client (which may
    be called from several threads)."""

    client: Any
    table_name: str
    bucket: str

    def claimed(self, objects: Iterable[Version]) -> dict[Version, str]:
        """The run that claimed each of ``objects`` (absent: none)."""
        wanted = list(dict.fromkeys(objects))
        found: dict[Version, str] = {}
        for start in range(0, len(wanted), _BATCH_GET):
            keys = [self._claim_key(o) for o in wanted[start : start + _BATCH_GET]]
            request: dict[str, Any] = {self.table_name: {"Keys": keys, "ConsistentRead": True}}
            while request:
                answer = self.client.batch_get_item(RequestItems=request)
                for item in answer["Responses"].get(self.table_name, []):
                    if "run" in item:
                        uri = item[PARTITION_KEY]["S"].removeprefix(CLAIM_PREFIX)
                        key = uri.removeprefix(f"s3://{self.bucket}/")
                        found[(key, item[SORT_KEY]["S"])] = item["run"]["S"]
                request = answer.get("UnprocessedKeys") or {}
        return found

    def run(self, name: str) -> tuple[ArrivalRun, str] | None:
        """The run ``name`` as its record keeps it and its state (``""``, STARTED,
        ABANDONED); None when it has no record."""
        item = self.client.get_item(
            TableName=self.table_name, Key=self._record_key(name), ConsistentRead=True
        ).get("Item")
        return None if item is None else _from_record(name, item)

    def record(self, run: ArrivalRun) -> str:
        """Keep ``run``'s record (a record kept before is left as it is: the name is a
        digest of what the run takes); the run's state."""
        item = self.client.update_item(
            TableName=self.table_name,
            Key=self._record_key(run.name),
            UpdateExpression=(
                "SET #request = if_not_exists(#request, :request), "
                "#objects = if_not_exists(#objects, :objects), #expires = :expires"
            ),
            ExpressionAttributeNames={
                "#request": "request",
                "#objects": "objects",
                "#expires": TTL_ATTRIBUTE,
            },
            ExpressionAttributeValues={
                ":request": {"S": json.dumps(run.request)},
                ":objects": {"S": json.dumps([list(o) for o in run.objects])},
                ":expires": {"N": str(self._expiry())},
            },
            ReturnValues="ALL_NEW",
        )["Attributes"]
        return _from_record(run.name, item)[1]

    def claim(self, name: str, version: Version) -> bool:
        """Claim ``version`` for the run ``name``; False when another run holds it."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._claim_key(version),
                UpdateExpression="SET #run = :run, #expires = :expires",
                ConditionExpression="attribute_not_exists(#run) OR #run = :run",
                ExpressionAttributeNames={"#run": "run", "#expires": TTL_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":run": {"S": name},
                    ":expires": {"N": str(self._expiry())},
                },
            )
        except ClientError as exc:
            if condition_failed(exc):
                return False
            raise
        return True

    def release(self, name: str, version: Version) -> None:
        """Give back ``version`` if the run ``name`` holds it."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._claim_key(version),
                UpdateExpression="REMOVE #run",
                ConditionExpression="#run = :run",
                ExpressionAttributeNames={"#run": "run"},
                ExpressionAttributeValues={":run": {"S": name}},
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise

    def settle(self, name: str, state: str) -> bool:
        """Mark the run ``name`` STARTED or ABANDONED unless it is marked the other way;
        whether it is now ``state``."""
        other = ABANDONED if state == STARTED else STARTED
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._record_key(name),
                UpdateExpression="SET #state = :state",
                ConditionExpression="attribute_exists(#request) AND "
                "(attribute_not_exists(#state) OR #state <> :other)",
                ExpressionAttributeNames={"#request": "request", "#state": "state"},
                ExpressionAttributeValues={":state": {"S": state}, ":other": {"S": other}},
            )
        except ClientError as exc:
            if condition_failed(exc):
                return False
            raise
        return True

    def _claim_key(self, version: Version) -> dict[str, Any]:
        key, sequencer = version
        return {
            PARTITION_KEY: {"S": f"{CLAIM_PREFIX}s3://{self.bucket}/{key}"},
            SORT_KEY: {"S": sequencer},
        }

    @staticmethod
    def _record_key(name: str) -> dict[str, Any]:
        return {PARTITION_KEY: {"S": name}, SORT_KEY: {"S": RUN_RECORD_SK}}

    def _expiry(self) -> int:
        return int(time.time()) + KEEP_DAYS * 86400


def _from_record(name: str, item: Mapping[str, Any]) -> tuple[ArrivalRun, str]:
    objects: Sequence[list[str]] = json.loads(item["objects"]["S"])
    run = ArrivalRun(
        name=name,
        request=json.loads(item["request"]["S"]),
        objects=tuple((key, version) for key, version in objects),
    )
    return run, item.get("state", {}).get("S", "")
