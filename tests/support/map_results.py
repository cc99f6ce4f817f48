"""A Distributed Map's results as Step Functions' result writer leaves them under
``<prefix>/<map run id>/``: one result file per child status (``SUCCEEDED_0.json``,
``FAILED_0.json``) and ``manifest.json`` listing them; and the SplitInputs and CountShards
Maps played in-process.

What a file holds follows the ResultWriter's ``WriterConfig``
(https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html):
without one (Transformation ``NONE``, OutputType ``JSON``) a JSON array of each child with
its execution metadata and its ``Input`` and ``Output`` as JSON strings; with ``COMPACT``
a succeeded child is its output alone (``FLATTEN``: an output that is an array, its
elements); with ``JSONL`` each result is one line. A failed
child is written unchanged whatever the Transformation: its metadata, ``Input``, ``Error``
and ``Cause``."""

import json
import uuid
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from tempfile import TemporaryFile
from typing import Any

from batchinfer.pipeline.contract.layout import MAP_RESULTS_FORMAT, MAP_RESULTS_PREFIX

SUCCEEDED, FAILED = "SUCCEEDED", "FAILED"
# The times of every child written: the results' size, not their dates, is what matters.
STARTED, STOPPED = "2025-01-01T00:00:00.000Z", "2025-01-01T00:00:01.000Z"


@dataclass(frozen=True)
class Child:
    """One child execution of a Map: its input, and its output or its error and cause."""

    input: Any
    output: Any = None
    error: str | None = None
    cause: str | None = None

    @property
    def status(self) -> str:
        return SUCCEEDED if self.error is None else FAILED


def _full(child: Child, number: int, map_run_arn: str) -> dict[str, Any]:
    """The child as Transformation NONE writes it: metadata, Input, Output or Error/Cause."""
    machine = map_run_arn.replace(":mapRun:", ":stateMachine:").rsplit(":", 1)[0]
    result: dict[str, Any] = {
        "ExecutionArn": f"{map_run_arn.replace(':mapRun:', ':execution:')}:{number:08d}",
        "Input": json.dumps(child.input),
        "InputDetails": {"Included": True},
        "Name": f"{number:08d}-{uuid.UUID(int=number)}",
        "RedriveCount": 0,
        "RedriveStatus": "NOT_REDRIVABLE",
        "RedriveStatusReason": f"Execution is {child.status} and cannot be redriven",
        "StartDate": STARTED,
        "StateMachineArn": machine,
        "Status": child.status,
        "StopDate": STOPPED,
    }
    if child.error is None:
        return result | {"Output": json.dumps(child.output), "OutputDetails": {"Included": True}}
    return result | {"Error": child.error, "Cause": child.cause or ""}


def write_map_results(
    s3: Any,
    bucket: str,
    prefix: str,
    map_run_arn: str,
    children: Iterable[Child],
    writer_config: dict[str, str] | None,
) -> str:
    """Write the results of ``children`` (read once, one at a time) as the ResultWriter with
    ``writer_config`` (None: no WriterConfig) does; the key of the manifest."""
    config = writer_config or {}
    transformation = config.get("Transformation", "NONE")
    lines = config.get("OutputType", "JSON") == "JSONL"
    folder = (prefix.rstrip("/") + "/" if prefix else "") + map_run_arn.split(":")[-1] + "/"
    with ExitStack() as stack:
        spools = {status: stack.enter_context(TemporaryFile()) for status in (SUCCEEDED, FAILED)}
        counts = dict.fromkeys(spools, 0)

        def add(status: str, result: Any) -> None:
            text = json.dumps(result).encode()
            spools[status].write(
                text + b"\n" if lines else (b"," if counts[status] else b"[") + text
            )
            counts[status] += 1

        for number, child in enumerate(children):
            if child.status == FAILED or transformation == "NONE":
                add(child.status, _full(child, number, map_run_arn))
            elif transformation == "FLATTEN" and isinstance(child.output, list):
                for result in child.output:
                    add(SUCCEEDED, result)
            else:
                add(SUCCEEDED, child.output)
        files: dict[str, list[dict[str, Any]]] = {FAILED: [], "PENDING": [], SUCCEEDED: []}
        for status, spool in spools.items():
            if not counts[status]:
                continue
            if not lines:
                spool.write(b"]")
            key = f"{folder}{status}_0.json"
            files[status].append({"Key": key, "Size": spool.tell()})
            spool.seek(0)
            s3.upload_fileobj(spool, bucket, key)
    manifest = {"DestinationBucket": bucket, "MapRunArn": map_run_arn, "ResultFiles": files}
    key = f"{folder}manifest.json"
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(manifest).encode())
    return key


def map_run(s3: Any, bucket: str, state: str, children: Iterable[Child]) -> str:
    """The key of the result manifest the Map state ``state`` leaves after ``children``,
    written as the definition's result writer does."""
    run = f"arn:aws:states:eu-west-1:123456789012:mapRun:runs/{state}:{uuid.uuid4()}"
    return write_map_results(s3, bucket, MAP_RESULTS_PREFIX, run, children, MAP_RESULTS_FORMAT)


def split_inputs(s3: Any, bucket: str, split_object: Callable[[Any, Any], Any], plan: dict) -> str:
    """What the SplitInputs Map leaves in ``$.splits.manifest``: each of ``plan``'s split
    tasks split by the ``split_object`` handler, its answers in the Map's result files."""
    body = s3.get_object(Bucket=bucket, Key=plan["inputs_key"])["Body"].read()
    tasks = [json.loads(line) for line in body.splitlines() if line.strip()]
    return map_run(
        s3, bucket, "SplitInputs", [Child(task, split_object(task, None)) for task in tasks]
    )


def count_shards(
    s3: Any, bucket: str, count_shard: Callable[[Any, Any], Any], plan: dict, round_: dict
) -> dict[str, str]:
    """What the CountShards Map leaves in ``$.counts``: each line of the round's shard list
    checked by the ``count_shard`` handler, the answers written as the definition's result
    writer does."""
    body = s3.get_object(Bucket=bucket, Key=round_["shards_key"])["Body"].read()
    children = []
    for line in body.splitlines():
        if not line.strip():
            continue
        event = {
            "shard": json.loads(line),
            "job_output": plan["job_output"],
            "shards_prefix": plan["shards_prefix"],
            "settings": plan["settings"],
        }
        children.append(Child(event, count_shard(event, None)))
    return {"manifest": map_run(s3, bucket, "CountShards", children)}
