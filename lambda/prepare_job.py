"""Step Functions task: PrepareJob. Event: ``{"plan", "round"}``; returns the job's name,
engine and request for this attempt."""

from typing import Any

from batchinfer.pipeline.clients import services
from batchinfer.pipeline.prepare_job import prepare_job


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return prepare_job(event["plan"], event["round"], env=services().env)
