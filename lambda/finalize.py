"""Step Functions task: Finalize. Event: ``{"plan", "execution"}``; returns the run's
summary (status, output, counts)."""

from typing import Any

from batchinfer.pipeline.clients import services
from batchinfer.pipeline.finalize import finalize


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    return finalize(
        event["plan"],
        execution=event["execution"],
        env=aws.env,
        s3=aws.s3,
        table=aws.table,
        events=aws.events,
        sns=aws.sns,
    )
