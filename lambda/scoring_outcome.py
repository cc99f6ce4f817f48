"""Step Functions task: ScoringOutcome. Event: ``{"plan", "job"}`` after the endpoint Map;
answers the round's job outcome ``{"name", "status"}``, or fails with DataFailure naming
the shards whose records the endpoint refused."""

from typing import Any

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.steps.scoring_outcome import scoring_outcome
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    return scoring_outcome(RunPlan.from_state(event["plan"]), event["job"], s3=aws.s3).to_state()
