"""PrepareJob: the request of one job attempt (CreateTransformJob or CreateProcessingJob),
with a new job name (R1: a request outside CreateTransformJob's limits is refused), for the shards
of one round's ManifestFile (:mod:`batchinfer.pipeline.jobs.job_requests` builds it).
"""

from dataclasses import dataclass
from typing import Any

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.job_names import RUN_ID_TAG, job_name
from batchinfer.pipeline.contract.state import JobRequest, Round, RunPlan
from batchinfer.pipeline.jobs.job_requests import (
    PROCESSING_FIELDS,
    TRANSFORM_FIELDS,
    processing_request,
    processing_volume_gb,
    transform_request,
)
from batchinfer.pipeline.storage.s3io import run_settings


@dataclass(frozen=True)
class JobTask:
    """A ``.sync`` SageMaker task of the state machine (spec S1: a sync task's Parameters are the
    API request itself): it copies exactly ``fields`` from the request PrepareJob built, so the
    request must hold each of them."""

    state: str
    action: str
    kind: str  # "Transform" or "Processing": the Describe*Job field names
    fields: tuple[str, ...]


# (engine, data processing) -> the task that runs the job.
JOB_TASKS = {
    ("transform", False): JobTask(
        "TransformJob", "createTransformJob", "Transform", TRANSFORM_FIELDS
    ),
    ("transform", True): JobTask(
        "TransformJobWithDataProcessing",
        "createTransformJob",
        "Transform",
        (*TRANSFORM_FIELDS, "DataProcessing"),
    ),
    ("processing", False): JobTask(
        "ProcessingJob", "createProcessingJob", "Processing", PROCESSING_FIELDS
    ),
}


def prepare_job(
    plan: RunPlan, round_: Round, *, env: PipelineEnvironment, s3: Any, token: str | None = None
) -> JobRequest:
    """One attempt of ``round_``: a new job name, and its Create*Job request (for the
    endpoint engine: the round's shard list, which its Map scores)."""
    name = job_name(plan.job_base, round_.number, token)
    if plan.engine == "endpoint":
        return scoring_job(name)
    tags = [{"Key": RUN_ID_TAG, "Value": plan.run_id}]
    settings = run_settings(s3, plan)
    if plan.engine == "processing":
        volume = processing_volume_gb(plan.bytes, settings, env.processing_volume_gb)
        request = processing_request(
            name,
            settings,
            round_.manifest,
            plan.job_output,
            env,
            volume_gb=volume,
            model_data_url=plan.model_data_url or env.model_data_url,
        )
    else:
        request = transform_request(
            name,
            settings,
            round_.manifest,
            plan.job_output,
            env,
            model_name=plan.model_name or env.model_name,
        )
    request |= {"Tags": tags}
    data_processing = "DataProcessing" in request
    task = JOB_TASKS[(plan.engine, data_processing)]
    if sorted(request) != sorted(task.fields):
        raise ValueError(
            f"the {task.state} task copies {sorted(task.fields)}, the request has "
            f"{sorted(request)}: a field would be dropped or missing"
        )
    return JobRequest(
        name=name, engine=plan.engine, data_processing=data_processing, request=request
    )


def scoring_job(name: str) -> JobRequest:
    """An endpoint round's attempt: only its name; the ScoreShards Map's items are the
    round's shard list (``$.round.shards_key``, one JSON line a shard with its ``name`` and
    ``compression``)."""
    return JobRequest(name=name, engine="endpoint", data_processing=False, request={})
