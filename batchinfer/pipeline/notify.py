"""The "Batch Inference Run Finished" event (for other teams) and the SNS message (for
people), sent when a run succeeds or fails."""

import json
from typing import Any

from batchinfer.pipeline.environment import PipelineEnvironment
from batchinfer.pipeline.state import RunEnd

DETAIL_TYPE = "Batch Inference Run Finished"
SUBJECT_LIMIT = 100


def announce(run: RunEnd, *, env: PipelineEnvironment, events: Any, sns: Any) -> None:
    """Put the run-finished event on the stack's bus and publish to its topic. The detail
    is the run's end: run id, status, output URI, counts, and the error of a failure."""
    detail = run.to_state()
    if env.event_bus_name:
        response = events.put_events(
            Entries=[
                {
                    "EventBusName": env.event_bus_name,
                    "Source": env.event_source,
                    "DetailType": DETAIL_TYPE,
                    "Detail": json.dumps(detail, default=str),
                    "Resources": [run.execution] if run.execution else [],
                }
            ]
        )
        if response.get("FailedEntryCount"):
            raise RuntimeError(f"run-finished event not delivered: {response['Entries']}")
    if env.topic_arn:
        subject = f"batchinfer run {run.run_id} {run.status}"
        sns.publish(
            TopicArn=env.topic_arn,
            Subject=subject[:SUBJECT_LIMIT],
            Message=json.dumps(detail, indent=2, default=str),
            MessageAttributes={
                "status": {"DataType": "String", "StringValue": run.status},
                "run_id": {"DataType": "String", "StringValue": run.run_id},
            },
        )
