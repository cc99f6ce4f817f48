"""Step Functions task: CountShard, one item of the CountShards Map. Event: a
:class:`~batchinfer.pipeline.state.ShardCheck`; answers a ``ShardCount``."""

from typing import Any

from batchinfer.pipeline.clients import services
from batchinfer.pipeline.count_shard import count_shard
from batchinfer.pipeline.state import ShardCheck


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return count_shard(ShardCheck.from_state(event), s3=services().s3).to_state()
