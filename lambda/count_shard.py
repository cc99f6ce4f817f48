"""Step Functions task: CountShard, one item of the CountShards Map. Event: a
:class:`~batchinfer.pipeline.contract.state.ShardCheck`; answers a ``ShardCount``."""

from typing import Any

from batchinfer.pipeline.contract.state import ShardCheck
from batchinfer.pipeline.steps.count_shard import count_shard
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return count_shard(ShardCheck.from_state(event), s3=services().s3).to_state()
