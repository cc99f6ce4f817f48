"""Step Functions task: Finalize. Event: ``{"plan", "execution"}``; answers how the run
ended (status, output, counts)."""

from typing import Any

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.steps.finalize import finalize
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    return finalize(
        RunPlan.from_state(event["plan"]),
        execution=event["execution"],
        env=aws.env,
        s3=aws.s3,
        table=aws.table,
        events=aws.events,
        sns=aws.sns,
        sagemaker=aws.sagemaker,
    ).to_state()
