"""Step Functions task: Collect. Event: ``{"plan", "execution"}``; answers round 1."""

from typing import Any

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.steps.collect import collect
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    plan = RunPlan.from_state(event["plan"])
    return collect(plan, execution=event["execution"], s3=aws.s3, table=aws.table).to_state()
