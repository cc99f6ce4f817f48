"""Step Functions task: PrepareJob. Event: ``{"plan", "round"}``; answers the job's name,
engine and request for this attempt."""

from typing import Any

from batchinfer.pipeline.contract.state import Round, RunPlan
from batchinfer.pipeline.steps.prepare_job import prepare_job
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    plan, round_ = RunPlan.from_state(event["plan"]), Round.from_state(event["round"])
    aws = services()
    return prepare_job(plan, round_, env=aws.env, s3=aws.s3).to_state()
