"""Step Functions task: ScoringOutcome. Event: ``{"plan", "job", "scores"}`` after the endpoint
Map (``scores``: the key of its result manifest, ``$.scores.manifest``);
answers the round's job outcome ``{"name", "status"}``, or fails with DataFailure naming
the shards whose records the endpoint refused."""

from typing import Any

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.steps.scoring_outcome import scoring_outcome
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    plan = RunPlan.from_state(event["plan"])
    return scoring_outcome(plan, event["job"], scores=event["scores"], s3=aws.s3).to_state()
