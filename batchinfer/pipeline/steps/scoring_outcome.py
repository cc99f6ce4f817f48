"""ScoringOutcome: the end of an endpoint round, as a job's outcome. Every shard answered
``done`` or ``failed``, or its ScoreShard failed (the ScoreShards Map tolerates that and
lists it in its result files, ``scores``). Shards refused by the endpoint (4xx) fail the
run with DataFailure naming them (another round would be refused again); a shard whose
endpoint stayed unavailable (EndpointUnavailable past the Map's retries) is left without
output, so Verify resubmits it in the next round and the run fails naming it only after
the last; any other failure of a ScoreShard fails the run with MapItemFailed naming the
shard and its error. Otherwise the round is ``Completed`` and Verify checks every output as
it does a job's."""

from typing import Any

from batchinfer.pipeline.contract.run_errors import DataFailure, EndpointUnavailable, MapItemFailed
from batchinfer.pipeline.contract.state import JobOutcome, RunPlan
from batchinfer.pipeline.storage.map_results import MapResults, describe_failures, shard_name
from batchinfer.pipeline.storage.s3io import read_json
from batchinfer.sharding.listing import list_objects
from batchinfer.uris import S3Location

COMPLETED = "Completed"
SHOWN = 10


def scoring_outcome(plan: RunPlan, job: str, *, scores: str, s3: Any) -> JobOutcome:
    """``job``'s outcome (``scores``: the key of the ScoreShards Map's result manifest);
    DataFailure when the endpoint refused records of any shard, MapItemFailed when a
    ScoreShard failed otherwise than with the endpoint unavailable."""
    failures = shard_failures(s3, plan, job)
    if failures:
        listed = "; ".join(f["error"] for f in failures[:SHOWN])
        more = f" (and {len(failures) - SHOWN} more)" if len(failures) > SHOWN else ""
        raise DataFailure(
            f"endpoint {plan.endpoint and plan.endpoint['name']} refused records of "
            f"{len(failures)} shard(s) in {job}; no new round, the data would be refused "
            f"again: {listed}{more}"
        )
    results = MapResults.read(s3, S3Location(plan.layout.bucket, scores))
    results.unfinished()
    unavailable = EndpointUnavailable.__name__
    failed = describe_failures(
        (failure for failure in results.failures(s3) if failure.error != unavailable),
        shard_name,
    )
    if failed:
        raise MapItemFailed(f"{job}: scoring shards failed: {failed}")
    return JobOutcome(job, COMPLETED)


def shard_failures(s3: Any, plan: RunPlan, job: str) -> list[dict[str, Any]]:
    """The data failures the shards of attempt ``job`` recorded."""
    folder = plan.layout.scoring_failures(job)
    return [
        read_json(s3, S3Location(folder.bucket, obj["Key"])) for obj in list_objects(s3, folder)
    ]
