"""Step Functions task: ScoreShard (an item of the endpoint Map). Event: ``{"shard",
"plan", "job"}``; answers ``{"status": "done" | "continue" | "failed"}``: ``continue``
invokes it again, from the progress it saved."""

from typing import Any

from batchinfer.pipeline.contract.state import RunPlan, ShardEntry
from batchinfer.pipeline.steps.score_shard import score_shard
from batchinfer.pipeline.storage.clients import services


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    aws = services()
    status = score_shard(
        RunPlan.from_state(event["plan"]),
        ShardEntry.from_line(event["shard"], where="score event"),
        event["job"],
        s3=aws.s3,
        runtime=aws.runtime,
        seconds_left=lambda: context.get_remaining_time_in_millis() / 1000,
    )
    return {"status": status}
