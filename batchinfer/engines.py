"""The engines a run's shards can be transformed with, locally and in the cloud: SageMaker
transform jobs (model servers over HTTP) or processing jobs (the handlers in-process on
every core)."""

from typing import Literal, get_args

Engine = Literal["transform", "processing"]
ENGINES: tuple[Engine, ...] = get_args(Engine)
