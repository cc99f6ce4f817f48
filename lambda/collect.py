"""Step Functions task: Collect. Event: ``{"plan", "execution"}``; returns round 1."""

from typing import Any

from batchinfer.pipeline.clients import services
from batchinfer.pipeline.collect import collect


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    return collect(event["plan"], execution=event["execution"], s3=aws.s3, table=aws.table)
