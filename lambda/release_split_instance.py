"""Step Functions task: ReleaseSplitInstance. Event: ``{"job", "input"}`` (a split task's
``job`` and object); answers ``{"released"}`` (false when it held no instance)."""

from typing import Any

from batchinfer.pipeline.steps.release_split_instance import release_split_instance
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    return {
        "released": release_split_instance(
            event["job"], event["input"], env=aws.env, table=aws.table
        )
    }
