"""Step Functions tasks: CheckSplits, event ``{"plan", "splits"}`` (the key of the
SplitInputs Map's result manifest, ``$.splits.manifest``), and CheckMerges, event
``{"plan", "merges"}`` (the MergeOutputs Map's, ``$.merges.manifest``); answers nothing, or
fails with MapItemFailed naming the inputs whose split or merge failed."""

from typing import Any

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.steps.check_splits import check_merges, check_splits
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> None:
    aws = services()
    plan = RunPlan.from_state(event["plan"])
    if "merges" in event:
        check_merges(plan, merges=event["merges"], s3=aws.s3)
    else:
        check_splits(plan, splits=event["splits"], s3=aws.s3)
