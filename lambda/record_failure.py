"""The failure recorder. Two events: from the state machine's failure path
``{"state", "execution", "execution_name"}`` (answers ``{"error", "cause"}`` for the Fail
state), or an EventBridge "Step Functions Execution Status Change" for a run that timed
out or was aborted."""

from typing import Any

from batchinfer.pipeline.steps.record_failure import record_ended_execution, record_failure
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any] | None:
    aws = services()
    clients = {
        "env": aws.env,
        "table": aws.table,
        "events": aws.events,
        "sns": aws.sns,
        "sagemaker": aws.sagemaker,
    }
    if "detail-type" in event:
        failure = record_ended_execution(event, **clients)
    else:
        failure = record_failure(
            event["state"],
            execution=event["execution"],
            execution_name=event["execution_name"],
            **clients,
        )
    return failure.to_state() if failure else None
