"""The engines a run's shards can be scored with.

``Engine``: the SageMaker job engines, what ``batchinfer plan`` estimates and what the
state machine starts jobs of: transform jobs (model servers over HTTP) or processing jobs
(the handlers in-process on every core). ``PipelineEngine``: what the cloud pipeline (its
Plan and the stack's configuration) and ``batchinfer run`` accept: those two and
``endpoint`` (an existing real-time endpoint scores each shard in chunks).
"""

from typing import Literal, get_args

Engine = Literal["transform", "processing"]
ENGINES: tuple[Engine, ...] = get_args(Engine)

PipelineEngine = Literal["transform", "processing", "endpoint"]
PIPELINE_ENGINES: tuple[PipelineEngine, ...] = get_args(PipelineEngine)

LocalEngine = PipelineEngine
LOCAL_ENGINES: tuple[LocalEngine, ...] = PIPELINE_ENGINES
