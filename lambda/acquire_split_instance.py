"""Step Functions task: AcquireSplitInstance. Event: ``{"job", "input", "execution"}`` (a
split task's ``job`` and object); answers the split job's admission (granted, or waiting
since when)."""

from typing import Any

from batchinfer.pipeline.steps.acquire_split_instance import acquire_split_instance
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    return acquire_split_instance(
        event["job"], event["input"], execution=event["execution"], env=aws.env, table=aws.table
    ).to_state()
