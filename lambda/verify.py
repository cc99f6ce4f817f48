"""Step Functions task: Verify. Event: ``{"plan", "round", "job", "execution"}``; returns
the next round, or the same one with ``complete`` true."""

from typing import Any

from batchinfer.pipeline.clients import services
from batchinfer.pipeline.verify import verify


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    return verify(
        event["plan"],
        event["round"],
        event["job"],
        execution=event["execution"],
        s3=aws.s3,
        table=aws.table,
    )
