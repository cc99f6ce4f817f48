"""Step Functions task: MergeObject, one item of the MergeOutputs Map. Event: a
:class:`~batchinfer.pipeline.contract.state.MergeTask`; answers the merged output and how many
shard outputs it holds."""

from typing import Any

from batchinfer.pipeline.contract.state import MergeTask
from batchinfer.pipeline.steps.merge_object import merge_object
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return merge_object(MergeTask.from_state(event), s3=services().s3)
