"""SQS event source: the S3 trigger's batch of arrivals. Starts one run per folder and
answers the messages to deliver again (``batchItemFailures``)."""

from typing import Any

import boto3

from batchinfer.pipeline.steps.arrivals import Trigger, start_arrivals
from batchinfer.pipeline.storage.arrival_claims import ArrivalClaims


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # One invocation per batching window: a client per invocation costs nothing that counts.
    trigger = Trigger.from_variables()
    return start_arrivals(
        event,
        trigger=trigger,
        states=boto3.client("stepfunctions"),
        s3=boto3.client("s3"),
        claims=ArrivalClaims(boto3.client("dynamodb"), trigger.table_name, trigger.bucket),
        time_left_ms=context.get_remaining_time_in_millis,
    )
