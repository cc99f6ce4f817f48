"""SQS event source: the S3 trigger's batch of arrivals. Starts one run per folder and
answers the messages to deliver again (``batchItemFailures``)."""

from typing import Any

import boto3

from batchinfer.pipeline.steps.arrivals import Trigger, start_arrivals


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # One invocation per batching window: a client per invocation costs nothing that counts.
    return start_arrivals(
        event,
        trigger=Trigger.from_variables(),
        states=boto3.client("stepfunctions"),
        s3=boto3.client("s3"),
    )
