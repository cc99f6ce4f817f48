"""Step Functions task: Plan. Event: ``{"request", "execution", "execution_name",
"started_at"}``; answers the run's plan (``$.plan``)."""

from typing import Any

from batchinfer.pipeline.steps.plan import plan_run
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    return plan_run(
        event["request"],
        execution=event["execution"],
        execution_name=event["execution_name"],
        started_at=event["started_at"],
        env=aws.env,
        s3=aws.s3,
        sagemaker=aws.sagemaker,
        table=aws.table,
    ).to_state()
