"""Step Functions task: ReleaseInstances. Event: ``{"plan"}``; answers ``{"released"}``
(false when the run held no instances)."""

from typing import Any

from batchinfer.pipeline.clients import services
from batchinfer.pipeline.release_instances import release_instances
from batchinfer.pipeline.state import RunPlan


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    plan = RunPlan.from_state(event["plan"])
    return {"released": release_instances(plan, table=services().table)}
