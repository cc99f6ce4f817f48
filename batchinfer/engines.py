"""The engines a run's shards can be scored with.

``Engine``: the SageMaker job engines, what ``batchinfer plan`` estimates and what the
state machine starts jobs of: transform jobs (model servers over HTTP) or processing jobs
(the handlers in-process on every core). ``PipelineEngine``: what the cloud pipeline (its
Plan and the stack's configuration) and ``batchinfer run`` accept: those two and
``endpoint`` (an existing real-time endpoint scores each shard in chunks).
"""

from typing import Literal, get_args

from batchinfer.errors import ValidationError

Engine = Literal["transform", "processing"]
ENGINES: tuple[Engine, ...] = get_args(Engine)

PipelineEngine = Literal["transform", "processing", "endpoint"]
PIPELINE_ENGINES: tuple[PipelineEngine, ...] = get_args(PipelineEngine)

LocalEngine = PipelineEngine
LOCAL_ENGINES: tuple[LocalEngine, ...] = PIPELINE_ENGINES


def parse_engine(value: str) -> Engine:
    """``--engine`` of a command that plans or runs in the cloud: transform or processing."""
    return _one_of(value, ENGINES)  # type: ignore[return-value]


def parse_local_engine(value: str) -> LocalEngine:
    """``--engine`` of a local run or plan: transform, processing or endpoint."""
    return _one_of(value, LOCAL_ENGINES)  # type: ignore[return-value]


def _one_of(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValidationError(
            f"--engine must be {', '.join(allowed[:-1])} or {allowed[-1]}, not {value!r}"
        )
    return value
