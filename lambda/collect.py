"""Step Functions task: Collect. Event: ``{"plan", "execution", "splits"}`` (``splits``: the
key of the SplitInputs Map's result manifest, ``$.splits.manifest``; absent from an execution
started before a deploy that added it); answers round 1."""

from typing import Any

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.steps.collect import collect
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    plan = RunPlan.from_state(event["plan"])
    return collect(
        plan, execution=event["execution"], splits=event.get("splits"), s3=aws.s3, table=aws.table
    ).to_state()
