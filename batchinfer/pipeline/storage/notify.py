"""The "Batch Inference Run Finished" event (for other teams) and the SNS message (for
people), sent once when a run ends.

Once: each channel is claimed on the RUN item (a conditional write) before it is sent, and
the claim is released when the send fails, so a step that runs again after it announced
(Step Functions retries a Lambda whose answer was lost) sends nothing twice, and one whose
send failed sends it on the retry. Neither EventBridge nor a standard SNS topic takes an
idempotency key, so a claim is the only guard; its one gap is a Lambda that dies between
the claim and the send, which then announces nothing (at most once, never twice).
"""

import json
from collections.abc import Callable
from typing import Any

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.state import RunEnd
from batchinfer.pipeline.storage.status_table import StatusTable

DETAIL_TYPE = "Batch Inference Run Finished"
SUBJECT_LIMIT = 100


def announce(
    run: RunEnd, *, env: PipelineEnvironment, events: Any, sns: Any, table: StatusTable
) -> None:
    """Put the run-finished event on the stack's bus and publish to its topic, each once.
    The detail is the run's end: run id, status, output URI, counts, and the error of a
    failure."""
    detail = run.to_state()

    def send_event() -> None:
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

    def send_message() -> None:
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

    for channel, configured, send in (
        ("event", env.event_bus_name, send_event),
        ("sns", env.topic_arn, send_message),
    ):
        if configured:
            _once(run, table, channel, send)


def _once(run: RunEnd, table: StatusTable, channel: str, send: Callable[[], None]) -> None:
    execution = run.execution or ""
    if not table.claim_announcement(run.run_id, execution, channel):
        return
    try:
        send()
    except BaseException:
        table.release_announcement(run.run_id, execution, channel)
        raise
