"""A run's typed state as the tests build it: a plan and a round of a small CSV run."""

from batchinfer.pipeline.state import Round, RunPlan
from batchinfer.transform.settings import TransformSettings

CSV_LINES = {
    "content_type": "text/csv",
    "accept": "text/csv",
    "split_type": "Line",
    "assemble_with": "Line",
}


def example_plan(engine: str = "transform", run_id: str = "r-1", **settings: object) -> RunPlan:
    """The plan of run ``run_id`` in bucket ``b``: CSV lines, with ``settings`` on top."""
    return RunPlan(
        run_id=run_id,
        engine=engine,
        input="s3://b/input/",
        output=f"s3://b/output/{run_id}/",
        job_output=f"s3://b/output/{run_id}/",
        artefacts=f"s3://b/runs/{run_id}/",
        shards_prefix=f"s3://b/shards/{run_id}/",
        inputs_key=f"runs/{run_id}/inputs.json",
        objects=1,
        bytes=1,
        settings=TransformSettings.from_request(CSV_LINES | settings),
        merge=False,
        max_rounds=3,
        job_base=f"bi-test-{run_id}",
    )


def example_round(number: int = 1, manifest: str = "s3://b/runs/r-1/round-1.manifest") -> Round:
    return Round(number=number, manifest=manifest, complete=False, shards=1, missing=1)
