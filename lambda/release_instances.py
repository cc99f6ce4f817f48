"""Step Functions task: ReleaseInstances. Event: ``{"plan"}``; answers ``{"released"}``
(false when the run held no instances)."""

from typing import Any

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.steps.release_instances import release_instances
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    plan = RunPlan.from_state(event["plan"])
    return {"released": release_instances(plan, table=services().table)}
