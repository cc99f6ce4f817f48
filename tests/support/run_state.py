"""A run's typed state as the tests build it: a plan and a round of a small CSV run."""

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.state import Round, RunPlan
from batchinfer.transform.settings import TransformSettings

BUCKET = "batchinfer-test-data"  # the data bucket of the tests' moto account

CSV_LINES = {
    "content_type": "text/csv",
    "accept": "text/csv",
    "split_type": "Line",
    "assemble_with": "Line",
}


def example_env(job_prefix: str) -> PipelineEnvironment:
    """The environment of the pipeline's Lambdas over the test data bucket, as the benches
    of single steps give it (jobs named ``job_prefix``)."""
    return PipelineEnvironment(
        table_name="runs",
        data_bucket=BUCKET,
        job_prefix=job_prefix,
        transform_defaults={"content_type": "text/csv", "split_type": "Line"},
        shard_size="64MiB",
        max_rounds=2,
        model_name="m",
        image_uri="123456789012.dkr.ecr.eu-west-1.amazonaws.com/batchinfer:latest",
        sagemaker_role_arn="arn:aws:iam::123456789012:role/jobs",
    )


def example_plan(engine: str = "transform", run_id: str = "r-1", **settings: object) -> RunPlan:
    """The plan of run ``run_id`` in the test data bucket: CSV lines, with ``settings`` on top."""
    return RunPlan(
        run_id=run_id,
        engine=engine,
        input=f"s3://{BUCKET}/input/",
        output=f"s3://{BUCKET}/output/{run_id}/",
        job_output=f"s3://{BUCKET}/output/{run_id}/",
        artefacts=f"s3://{BUCKET}/runs/{run_id}/",
        shards_prefix=f"s3://{BUCKET}/shards/{run_id}/",
        inputs_key=f"runs/{run_id}/inputs.jsonl",
        objects=1,
        bytes=1,
        settings=TransformSettings.from_request(CSV_LINES | settings),
        merge=False,
        max_rounds=3,
        job_base=f"bi-test-{run_id}",
    )


def example_round(
    number: int = 1, manifest: str = f"s3://{BUCKET}/runs/r-1/round-1.manifest"
) -> Round:
    return Round(
        number=number,
        manifest=manifest,
        complete=False,
        shards=1,
        missing=1,
        shards_key=f"runs/r-1/round-{number}.shards.jsonl",
    )
