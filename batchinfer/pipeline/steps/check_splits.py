"""CheckSplits: after the SplitInputs Map, fail the run naming each input whose split failed
(SplitObject, or a split job: the child's error and cause), read from the Map's result
files. The Map tolerates every failed split, since its own failure on AWS
(``States.ExceedToleratedFailureThreshold``) would name no input."""

from typing import Any

from batchinfer.pipeline.contract.run_errors import MapItemFailed
from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.storage.map_results import MapResults, describe_failures
from batchinfer.uris import S3Location


def check_splits(plan: RunPlan, *, splits: str, s3: Any) -> None:
    """MapItemFailed naming the inputs whose split failed (``splits``: the key of the
    SplitInputs Map's result manifest)."""
    results = MapResults.read(s3, S3Location(plan.layout.bucket, splits))
    results.unfinished()
    failed = describe_failures(results.failures(s3), _input_of)
    if failed:
        raise MapItemFailed(f"run {plan.run_id}: splitting inputs failed: {failed}")


def _input_of(split_task: Any) -> str:
    """The input object a split child was given (its split task's ``input``)."""
    if isinstance(split_task, dict) and isinstance(split_task.get("input"), str):
        return split_task["input"]
    return repr(split_task)
