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

Execution names come from the folder and the object versions a run takes (each key with the
sequencer of the PUT that made it), and each version is claimed for one run in the status
table before the run starts (:mod:`batchinfer.pipeline.storage.arrival_claims`): a batch
delivered again, whole or regrouped with other messages, starts no second run of an object.
Runs start :data:`STARTS_AT_ONCE` at a time while the invocation has :data:`TIME_LEFT_MS`
left. Messages that are no arrival of the trigger's prefix, and those of a run that did not
start, are answered as batch item failures; SQS delivers them again and moves them to the
dead-letter queue after ``maxReceiveCount`` receives.
"""

import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote_plus

from botocore.exceptions import ClientError

from batchinfer.errors import ValidationError
from batchinfer.pipeline.storage.arrival_claims import (
    ABANDONED,
    STARTED,
    ArrivalClaims,
    ArrivalRun,
    Version,
)
from batchinfer.sharding.selection import is_stray, under_prefix

LOG = logging.getLogger(__name__)

# What one run's request may take, below Step Functions' 256 KiB execution input.
REQUEST_BYTES = 200_000
# What a run's record may take (its request and object versions), below DynamoDB's 400 KB item.
RECORD_BYTES = 350_000
# Runs started at once, and claims written at once for one run.
STARTS_AT_ONCE = 8
CLAIMS_AT_ONCE = 16
# An invocation with less time left starts no further run: its messages go back to the queue.
TIME_LEFT_MS = 20_000
# Event keys looked up at most to tell whether a batch's keys are URL-encoded.
KEY_PROBES = 3
_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]+")
_VARIABLES = {
    "bucket": "BATCHINFER_TRIGGER_BUCKET",
    "prefix": "BATCHINFER_TRIGGER_PREFIX",
    "request": "BATCHINFER_TRIGGER_REQUEST",
    "state_machine_arn": "BATCHINFER_STATE_MACHINE_ARN",
    "table_name": "BATCHINFER_TRIGGER_TABLE",
}


@dataclass(frozen=True)
class Trigger:
    """What the trigger's Lambda knows of its stack: the watched bucket and prefix, the
    other keys of each run's request, the state machine it starts and the status table
    that keeps which run took each arrival."""

    bucket: str
    prefix: str
    request: Mapping[str, Any]
    state_machine_arn: str
    table_name: str

    def to_variables(self, request_json: str) -> dict[str, str]:
        """The Lambda's environment; ``request_json`` is :attr:`request` as JSON (the stack
        writes it with deploy-time references)."""
        values = {"bucket": self.bucket, "prefix": self.prefix, "request": request_json}
        values["state_machine_arn"] = self.state_machine_arn
        values["table_name"] = self.table_name
        return {_VARIABLES[name]: value for name, value in values.items()}

    @classmethod
    def from_variables(cls, variables: Mapping[str, str] | None = None) -> "Trigger":
        variables = os.environ if variables is None else variables
        values = {name: variables[variable] for name, variable in _VARIABLES.items()}
        return cls(**(values | {"request": json.loads(values["request"])}))


@dataclass(frozen=True)
class Arrival:
    """One SQS message: the EventBridge event id, the created object's key and version (the
    event's ``sequencer``, else its ``etag``, else the event id)."""

    message_id: str
    event_id: str
    key: str
    version: str

    @property
    def object(self) -> Version:
        return (self.key, self.version)


@dataclass(frozen=True)
class RunStart:
    """One execution to start and the messages it answers for."""

    run: ArrivalRun
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
    found = detail.get("object") or {}
    version = found.get("sequencer") or found.get("etag") or event["id"]
    return Arrival(message_id, event["id"], key, str(version))


def resolve_keys(keys: Iterable[str], exists: Callable[[str], bool]) -> dict[str, str]:
    """The object each event key names. S3 URL-encodes the keys of its notifications as a
    form does ("red flower.jpg" is "red+flower.jpg"; Amazon S3 User Guide, "Event message
    structure"), and AWS's Lambda Powertools decodes those of its EventBridge events with
    ``unquote_plus`` alike; a key decoding leaves alone is taken as it is. Events carrying
    raw keys are seen too, and a key decoding changes could be either, but every event of
    a batch comes from the same source: the first of at most :data:`KEY_PROBES` such keys
    of which one reading exists and the other does not settles it for the batch (if none
    does, the decoded keys: AWS's rule; Plan names an object that is missing)."""
    keys = list(dict.fromkeys(keys))
    decode = True
    for key in [k for k in keys if unquote_plus(k) != k][:KEY_PROBES]:
        decoded, raw = exists(unquote_plus(key)), exists(key)
        if decoded != raw:
            decode = decoded
            break
    return {key: unquote_plus(key) if decode else key for key in keys}


def folder_of(key: str) -> str:
    """The key's parent prefix (``in/a/b.csv`` -> ``in/a/``)."""
    return key[: key.rfind("/") + 1]


def run_starts(arrivals: Sequence[Arrival], trigger: Trigger) -> list[RunStart]:
    """One start per folder of ``arrivals`` (more for a folder whose names pass
    :data:`REQUEST_BYTES`, or whose record passes :data:`RECORD_BYTES`); folder markers
    (keys ending with ``/``) and hidden or ``_``-prefixed keys below the trigger's prefix
    start nothing."""
    folders: dict[str, list[Arrival]] = {}
    for arrival in arrivals:
        if _is_input(arrival.key, trigger.prefix):
            folders.setdefault(folder_of(arrival.key), []).append(arrival)
    starts = []
    for folder, found in sorted(folders.items()):
        by_name: dict[str, list[Arrival]] = {}
        for arrival in found:
            by_name.setdefault(arrival.key[len(folder) :], []).append(arrival)
        versions = {name: sorted({a.object for a in taken}) for name, taken in by_name.items()}
        base = dict(trigger.request) | {"input": f"s3://{trigger.bucket}/{folder}"}
        for names in _chunks(versions, len(json.dumps(base | {"names": []}))):
            objects = tuple(o for name in names for o in versions[name])
            starts.append(
                RunStart(
                    ArrivalRun(
                        name=execution_name(folder, trigger.prefix, objects),
                        request=base | {"names": names},
                        objects=objects,
                    ),
                    message_ids=tuple(
                        dict.fromkeys(a.message_id for name in names for a in by_name[name])
                    ),
                )
            )
    return starts


def _is_input(key: str, prefix: str) -> bool:
    """Whether the object ``key`` that arrived under ``prefix`` is an input: not a folder
    marker, nor hidden or ``_``-prefixed below the prefix."""
    return not key.endswith("/") and not is_stray(*under_prefix(prefix, key))


def _chunks(versions: Mapping[str, list[Version]], base_bytes: int) -> Iterator[list[str]]:
    """The names of ``versions`` in sorted runs whose request stays within
    :data:`REQUEST_BYTES` and whose record (the request and the versions) within
    :data:`RECORD_BYTES`."""
    chunk: list[str] = []
    request = record = base_bytes
    for name in sorted(versions):
        added = len(json.dumps(name)) + 2  # ", " between list items
        kept = added + sum(len(json.dumps(list(o))) + 2 for o in versions[name])
        if chunk and (request + added > REQUEST_BYTES or record + kept > RECORD_BYTES):
            yield chunk
            chunk, request, record = [], base_bytes, base_bytes
        chunk.append(name)
        request, record = request + added, record + kept
    if chunk:
        yield chunk


def execution_name(folder: str, prefix: str, objects: Iterable[Version]) -> str:
    """``<folder below the prefix>-<digest of the folder and object versions>``: at most 80
    characters of letters, digits, ``-`` and ``_`` (an execution name and a run id)."""
    taken = sorted(f"{key}\t{version}" for key, version in objects)
    digest = hashlib.sha256("\n".join([folder, *taken]).encode()).hexdigest()
    readable = _NAME_CHARACTERS.sub("-", folder[len(prefix) :]).strip("-_")[:48].strip("-_")
    return f"{readable or 'arrivals'}-{digest[:24]}"


def start_arrivals(
    event: Mapping[str, Any],
    *,
    trigger: Trigger,
    states: Any,
    s3: Any,
    claims: ArrivalClaims,
    time_left_ms: Callable[[], int],
) -> dict[str, Any]:
    """Start the runs of one SQS batch; the messages to deliver again, as the event source
    mapping's ReportBatchItemFailures reads them. ``time_left_ms`` is the invocation's
    (the Lambda context's ``get_remaining_time_in_millis``)."""
    failed: list[str] = []
    arrivals = []
    for record in event.get("Records", []):
        try:
            arrivals.append(parse_arrival(record, trigger))
        except ValidationError as exc:
            LOG.warning("not an arrival: %s", exc)
            failed.append(record.get("messageId", ""))

    def exists(key: str) -> bool:
        listed = s3.list_objects_v2(Bucket=trigger.bucket, Prefix=key, MaxKeys=1)
        return any(obj["Key"] == key for obj in listed.get("Contents", []))

    resolved = resolve_keys((a.key for a in arrivals), exists)
    arrivals = [replace(a, key=resolved[a.key]) for a in arrivals]
    starts, lost = _runs_of(arrivals, trigger, claims)
    failed += lost
    with (
        ThreadPoolExecutor(STARTS_AT_ONCE) as runs,
        ThreadPoolExecutor(CLAIMS_AT_ONCE) as pool,
    ):
        started = list(
            runs.map(lambda s: _start(s.run, trigger, states, claims, pool, time_left_ms), starts)
        )
    for start, ok in zip(starts, started, strict=True):
        if not ok:
            failed.extend(start.message_ids)
    return {"batchItemFailures": [{"itemIdentifier": m} for m in dict.fromkeys(failed)]}


def _runs_of(
    arrivals: Sequence[Arrival], trigger: Trigger, claims: ArrivalClaims
) -> tuple[list[RunStart], list[str]]:
    """The runs ``arrivals`` belong to: the recorded run that claimed or lists an object,
    else new ones (:func:`run_starts`); and the messages of claims whose run has no record
    (none is claimed before its run's record is kept)."""
    claimed = claims.claimed(a.object for a in arrivals)
    records = {name: claims.run(name) for name in sorted(set(claimed.values()))}
    owner = {o: name for name, found in records.items() if found for o in found[0].objects}
    owner |= claimed
    of_run: dict[str, list[str]] = {}
    new, lost = [], []
    for arrival in arrivals:
        name = owner.get(arrival.object)
        if name is None:
            new.append(arrival)
        elif records[name] is None:
            LOG.error("run %s claimed %s but has no record", name, arrival.key)
            lost.append(arrival.message_id)
        else:
            of_run.setdefault(name, []).append(arrival.message_id)
    known = [
        RunStart(found[0], tuple(dict.fromkeys(of_run[name])))
        for name, found in records.items()
        if found and name in of_run
    ]
    return known + run_starts(new, trigger), lost


def _start(
    run: ArrivalRun,
    trigger: Trigger,
    states: Any,
    claims: ArrivalClaims,
    pool: ThreadPoolExecutor,
    time_left_ms: Callable[[], int],
) -> bool:
    """Claim ``run``'s objects and start it (again: ExecutionAlreadyExists is success);
    whether it is started. A run another run took an object of is abandoned instead."""
    if time_left_ms() < TIME_LEFT_MS:
        LOG.warning("run %s not started: the invocation is running out of time", run.name)
        return False
    state = claims.record(run)
    if state != STARTED:
        taken = state != ABANDONED and all(
            pool.map(lambda version: claims.claim(run.name, version), run.objects)
        )
        if not (taken and claims.settle(run.name, STARTED)) and claims.settle(run.name, ABANDONED):
            LOG.warning("run %s abandoned: another run took one of its objects", run.name)
            list(pool.map(lambda version: claims.release(run.name, version), run.objects))
            return False
    try:
        states.start_execution(
            stateMachineArn=trigger.state_machine_arn,
            name=run.name,
            input=json.dumps(run.request),
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ExecutionAlreadyExists":
            LOG.info("run %s was started by an earlier delivery", run.name)
            return True
        LOG.error("run %s of %s did not start: %s", run.name, run.request["input"], exc)
        return False
    LOG.info(
        "started run %s: %d objects of %s",
        run.name,
        len(run.request["names"]),
        run.request["input"],
    )
    return True
