"""Step Functions task: ScoreShard (an item of the endpoint Map). Event: ``{"shard",
"plan", "job"}``; answers ``{"status": "done" | "continue" | "failed"}``: ``continue``
invokes it again, from the progress it saved."""

from typing import Any

from batchinfer.pipeline.clients import services
from batchinfer.pipeline.score_shard import ShardItem, score_shard
from batchinfer.pipeline.state import RunPlan


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    status = score_shard(
        RunPlan.from_state(event["plan"]),
        ShardItem.from_state(event["shard"]),
        event["job"],
        s3=aws.s3,
        runtime=aws.runtime,
        seconds_left=lambda: context.get_remaining_time_in_millis() / 1000,
    )
    return {"status": status}
