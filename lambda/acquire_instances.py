"""Step Functions task: AcquireInstances. Event: ``{"plan", "round", "execution"}``; answers
the run's admission (granted, or waiting since when)."""

from typing import Any

from batchinfer.pipeline.contract.state import Round, RunPlan
from batchinfer.pipeline.steps.acquire_instances import acquire_instances
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    plan, round_ = RunPlan.from_state(event["plan"]), Round.from_state(event["round"])
    aws = services()
    return acquire_instances(
        plan, round_, execution=event["execution"], env=aws.env, table=aws.table
    ).to_state()
