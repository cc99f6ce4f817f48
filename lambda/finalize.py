"""Step Functions task: Finalize. Event: ``{"plan", "execution"}``; answers how the run
ended (status, output, counts)."""

from typing import Any

from batchinfer.pipeline.clients import services
from batchinfer.pipeline.finalize import finalize
from batchinfer.pipeline.state import RunPlan


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
