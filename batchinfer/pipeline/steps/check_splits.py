"""CheckSplits and CheckMerges: after a Map over the run's input objects (SplitInputs, whose
children split them; MergeOutputs, whose children merge their outputs), fail the run naming
each input whose child failed (its error and cause), read from the Map's result files. The
Maps tolerate every failed child, since their own failure on AWS
(``States.ExceedToleratedFailureThreshold``) would name no input."""

from typing import Any

from batchinfer.pipeline.contract.run_errors import MapItemFailed
from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.storage.map_results import MapResults, describe_failures
from batchinfer.uris import S3Location


def check_splits(plan: RunPlan, *, splits: str, s3: Any) -> None:
    """MapItemFailed naming the inputs whose split failed (``splits``: the key of the
    SplitInputs Map's result manifest)."""
    _check(plan, splits, "splitting inputs", s3)


def check_merges(plan: RunPlan, *, merges: str, s3: Any) -> None:
    """MapItemFailed naming the inputs whose outputs were not merged (``merges``: the key of
    the MergeOutputs Map's result manifest)."""
    _check(plan, merges, "merging outputs", s3)


def _check(plan: RunPlan, manifest: str, task: str, s3: Any) -> None:
    results = MapResults.read(s3, S3Location(plan.layout.bucket, manifest))
    results.unfinished()
    failed = describe_failures(results.failures(s3), _input_of)
    if failed:
        raise MapItemFailed(f"run {plan.run_id}: {task} failed: {failed}")


def _input_of(split_task: Any) -> str:
    """The input object a split child was given (its split task's ``input``)."""
    if isinstance(split_task, dict) and isinstance(split_task.get("input"), str):
        return split_task["input"]
    return repr(split_task)
