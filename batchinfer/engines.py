"""The engines a run's shards can be transformed with.

``Engine``: what the cloud pipeline (its Plan and the stack's configuration) accepts, and
what ``batchinfer plan`` estimates: SageMaker transform jobs (model servers over HTTP) or
processing jobs (the handlers in-process on every core). ``LocalEngine``: what
``batchinfer run`` accepts, those two and ``endpoint`` (an existing real-time endpoint
scores the input in chunks), which the pipeline does not run yet.
"""

from typing import Literal, get_args

Engine = Literal["transform", "processing"]
ENGINES: tuple[Engine, ...] = get_args(Engine)

LocalEngine = Literal["transform", "processing", "endpoint"]
LOCAL_ENGINES: tuple[LocalEngine, ...] = get_args(LocalEngine)
