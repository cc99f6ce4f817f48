"""The S3 trigger: one batch of arrivals becomes one run per folder.

EventBridge puts each "Object Created" event of the trigger's prefix on an SQS queue; the
queue's event source mapping hands the Lambda every message of a batching window at once.
The arrivals are grouped by folder (the key's parent prefix, under the trigger's prefix)
and each folder starts one execution whose request's ``input`` is the folder and whose
``names`` are the batch's new objects in it, so a later batch for the same folder does not
score them again. A folder with more names than one request holds (Step Functions takes at
most 256 KiB of input) starts one execution per :data:`REQUEST_BYTES` of names. Hidden and
``_``-prefixed arrivals (a Spark job's ``_SUCCESS``, ``.crc`` files and ``_temporary/``) start
nothing: they are no inputs (:mod:`batchinfer.sharding.selection`).

Execution names come from the folder and the EventBridge event ids of the arrivals a run
takes: a redelivered batch asks for the same names, and ExecutionAlreadyExists is success.
Messages that are no arrival of the trigger's prefix, and those of a run that could not be
started, are answered as batch item failures; SQS delivers them again and moves them to the
dead-letter queue after ``maxReceiveCount`` receives.
"""

import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote_plus

from botocore.exceptions import ClientError

from batchinfer.errors import ValidationError
from batchinfer.sharding.selection import is_stray, under_prefix

LOG = logging.getLogger(__name__)

# What one run's request may take, below Step Functions' 256 KiB execution input.
REQUEST_BYTES = 200_000
_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]+")
_VARIABLES = {
    "bucket": "BATCHINFER_TRIGGER_BUCKET",
    "prefix": "BATCHINFER_TRIGGER_PREFIX",
    "request": "BATCHINFER_TRIGGER_REQUEST",
    "state_machine_arn": "BATCHINFER_STATE_MACHINE_ARN",
}


@dataclass(frozen=True)
class Trigger:
    """What the trigger's Lambda knows of its stack: the watched bucket and prefix, the
    other keys of each run's request, and the state machine it starts."""

    bucket: str
    prefix: str
    request: Mapping[str, Any]
    state_machine_arn: str

    def to_variables(self, request_json: str) -> dict[str, str]:
        """The Lambda's environment; ``request_json`` is :attr:`request` as JSON (the stack
        writes it with deploy-time references)."""
        values = {"bucket": self.bucket, "prefix": self.prefix, "request": request_json}
        values["state_machine_arn"] = self.state_machine_arn
        return {_VARIABLES[name]: value for name, value in values.items()}

    @classmethod
    def from_variables(cls, variables: Mapping[str, str] | None = None) -> "Trigger":
        variables = os.environ if variables is None else variables
        values = {name: variables[variable] for name, variable in _VARIABLES.items()}
        return cls(**(values | {"request": json.loads(values["request"])}))


@dataclass(frozen=True)
class Arrival:
    """One SQS message: the EventBridge event id and the created object's key."""

    message_id: str
    event_id: str
    key: str


@dataclass(frozen=True)
class RunStart:
    """One execution to start: its name and request, and the messages it answers for."""

    name: str
    request: dict[str, Any]
    message_ids: tuple[str, ...]


def parse_arrival(record: Mapping[str, Any], trigger: Trigger) -> Arrival:
    """The arrival an SQS record carries; ValidationError naming the message and the field
    when it is no "Object Created" event of the trigger's bucket and prefix."""
    message_id = record.get("messageId", "")
    where = f"message {message_id}"
    try:
        event = json.loads(record["body"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"{where}: body is not an EventBridge event in JSON: {exc}") from None
    detail = event.get("detail") if isinstance(event, dict) else None
    if not isinstance(detail, dict) or event.get("detail-type") != "Object Created":
        raise ValidationError(f"{where}: not an S3 'Object Created' event")
    bucket = (detail.get("bucket") or {}).get("name")
    key = (detail.get("object") or {}).get("key")
    if bucket != trigger.bucket:
        raise ValidationError(f"{where}: detail.bucket.name {bucket!r} is not {trigger.bucket!r}")
    if not isinstance(key, str) or not key.startswith(trigger.prefix):
        raise ValidationError(f"{where}: detail.object.key {key!r} is not under {trigger.prefix}")
    if not isinstance(event.get("id"), str):
        raise ValidationError(f"{where}: the event has no id")
    return Arrival(message_id, event["id"], key)


def resolve_key(key: str, exists: Callable[[str], bool]) -> str:
    """The object an event's key names. S3 URL-encodes the keys of its notifications as a
    form does ("red flower.jpg" is "red+flower.jpg"), and AWS's Lambda Powertools decodes
    those of its EventBridge events alike, but EventBridge samples with raw keys are seen
    too: where decoding changes the key, the one of the two that ``exists`` is taken (the
    decoded one when both or neither do; Plan names an object that is missing)."""
    decoded = unquote_plus(key)
    if decoded == key or exists(decoded) or not exists(key):
        return decoded
    return key


def folder_of(key: str) -> str:
    """The key's parent prefix (``in/a/b.csv`` -> ``in/a/``)."""
    return key[: key.rfind("/") + 1]


def run_starts(arrivals: Sequence[Arrival], trigger: Trigger) -> list[RunStart]:
    """One start per folder of ``arrivals`` (more for a folder whose names pass
    :data:`REQUEST_BYTES`); folder markers (keys ending with ``/``) and hidden or
    ``_``-prefixed keys below the trigger's prefix start nothing."""
    folders: dict[str, list[Arrival]] = {}
    for arrival in arrivals:
        if _is_input(arrival.key, trigger.prefix):
            folders.setdefault(folder_of(arrival.key), []).append(arrival)
    starts = []
    for folder, found in sorted(folders.items()):
        by_name: dict[str, list[Arrival]] = {}
        for arrival in found:
            by_name.setdefault(arrival.key[len(folder) :], []).append(arrival)
        base = dict(trigger.request) | {"input": f"s3://{trigger.bucket}/{folder}"}
        for names in _chunks(sorted(by_name), len(json.dumps(base | {"names": []}))):
            taken = [a for name in names for a in by_name[name]]
            starts.append(
                RunStart(
                    name=execution_name(folder, trigger.prefix, [a.event_id for a in taken]),
                    request=base | {"names": names},
                    message_ids=tuple(dict.fromkeys(a.message_id for a in taken)),
                )
            )
    return starts


def _is_input(key: str, prefix: str) -> bool:
    """Whether the object ``key`` that arrived under ``prefix`` is an input: not a folder
    marker, nor hidden or ``_``-prefixed below the prefix."""
    return not key.endswith("/") and not is_stray(*under_prefix(prefix, key))


def _chunks(names: list[str], base_bytes: int) -> Iterator[list[str]]:
    """``names`` in runs whose request stays within :data:`REQUEST_BYTES`."""
    chunk: list[str] = []
    size = base_bytes
    for name in names:
        added = len(json.dumps(name)) + 2  # ", " between list items
        if chunk and size + added > REQUEST_BYTES:
            yield chunk
            chunk, size = [], base_bytes
        chunk.append(name)
        size += added
    if chunk:
        yield chunk


def execution_name(folder: str, prefix: str, event_ids: Sequence[str]) -> str:
    """``<folder below the prefix>-<digest of the folder and event ids>``: at most 80
    characters of letters, digits, ``-`` and ``_`` (an execution name and a run id)."""
    digest = hashlib.sha256("\n".join([folder, *sorted(event_ids)]).encode()).hexdigest()
    readable = _NAME_CHARACTERS.sub("-", folder[len(prefix) :]).strip("-_")[:48].strip("-_")
    return f"{readable or 'arrivals'}-{digest[:24]}"


def start_arrivals(
    event: Mapping[str, Any], *, trigger: Trigger, states: Any, s3: Any
) -> dict[str, Any]:
    """Start the runs of one SQS batch; the messages to deliver again, as the event source
    mapping's ReportBatchItemFailures reads them."""
    failed: list[str] = []
    arrivals = []

    def exists(key: str) -> bool:
        listed = s3.list_objects_v2(Bucket=trigger.bucket, Prefix=key, MaxKeys=1)
        return any(obj["Key"] == key for obj in listed.get("Contents", []))

    for record in event.get("Records", []):
        try:
            arrival = parse_arrival(record, trigger)
        except ValidationError as exc:
            LOG.warning("not an arrival: %s", exc)
            failed.append(record.get("messageId", ""))
            continue
        arrivals.append(replace(arrival, key=resolve_key(arrival.key, exists)))
    for start in run_starts(arrivals, trigger):
        try:
            states.start_execution(
                stateMachineArn=trigger.state_machine_arn,
                name=start.name,
                input=json.dumps(start.request),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ExecutionAlreadyExists":
                LOG.info("run %s was started by an earlier delivery", start.name)
                continue
            LOG.error("run %s of %s did not start: %s", start.name, start.request["input"], exc)
            failed.extend(start.message_ids)
            continue
        LOG.info(
            "started run %s: %d objects of %s",
            start.name,
            len(start.request["names"]),
            start.request["input"],
        )
    return {"batchItemFailures": [{"itemIdentifier": m} for m in dict.fromkeys(failed)]}
