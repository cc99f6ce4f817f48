"""Step Functions task: Verify. Event: ``{"plan", "round", "job", "counts", "execution"}``
(``counts``: the key of the CountShards Map's result manifest, ``$.counts.manifest``);
answers the next round (with the wait before it after a capacity failure), or the same one
``complete``."""

from typing import Any

from batchinfer.pipeline.contract.state import JobOutcome, Round, RunPlan
from batchinfer.pipeline.steps.verify import verify
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    return verify(
        RunPlan.from_state(event["plan"]),
        Round.from_state(event["round"]),
        JobOutcome.from_state(event["job"]),
        counts=event["counts"],
        execution=event["execution"],
        s3=aws.s3,
        table=aws.table,
        capacity_wait=aws.env.capacity_wait_seconds,
    ).to_state()
