"""Step Functions task: CopyUnsplit, after a split job in the split Map. Event:
``{"input", "output"}`` (the item's object and shard folder); answers nothing."""

from typing import Any

from batchinfer.pipeline.steps.split_object import copy_unsplit_object
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> None:
    copy_unsplit_object(event["input"], event["output"], s3=services().s3)
