"""Step Functions task: SplitObject, one item of the split Map. Event: a
:class:`~batchinfer.pipeline.contract.state.SplitTask`; answers a ``SplitResult`` (where the shard
index is, and the shard list when it is short)."""

from typing import Any

from batchinfer.pipeline.contract.state import SplitTask
from batchinfer.pipeline.steps.split_object import split_object
from batchinfer.pipeline.storage.clients import s3_client


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return split_object(SplitTask.from_state(event), s3=s3_client()).to_state()
