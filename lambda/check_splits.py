"""Step Functions task: CheckSplits. Event: ``{"plan", "splits"}`` (``splits``: the key of
the SplitInputs Map's result manifest, ``$.splits.manifest``); answers nothing, or fails
with MapItemFailed naming the inputs whose split failed."""

from typing import Any

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.steps.check_splits import check_splits
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> None:
    aws = services()
    check_splits(RunPlan.from_state(event["plan"]), splits=event["splits"], s3=aws.s3)
