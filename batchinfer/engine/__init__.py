"""The engine: the code that turns input files into ``.out`` files with Batch Transform's
semantics, on this machine (``batchinfer run``) and inside the inference image
(``batchinfer process``, a Processing job). Light to import: the pipeline's Lambdas read
:data:`ENGINES` from here."""

from typing import Literal, get_args

# How a run's shards are transformed: SageMaker transform jobs (model servers over HTTP)
# or processing jobs (the handlers in-process on every core).
Engine = Literal["transform", "processing"]
ENGINES: tuple[Engine, ...] = get_args(Engine)
