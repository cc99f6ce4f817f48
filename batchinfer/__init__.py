"""batchinfer: SageMaker Batch Transform pipelines, deployable with CDK and runnable locally.

From Python, :func:`run` runs a Batch Transform job on this machine and :func:`plan` says what
one would do and cost, with the options of ``batchinfer run`` and ``batchinfer plan`` as
keyword arguments::

    import batchinfer

    result = batchinfer.run(
        "input/", model="model/", output="out/", content_type="text/csv", split_type="Line"
    )
    print(result.status, [f.records_out for f in result.files])

:class:`Transformer` takes the SageMaker Python SDK's ``Transformer`` arguments and runs its
``transform`` here, without Docker. Errors are :class:`BatchInferError`\\ s with the messages
the command line prints; :class:`JobFailed` carries the result of a run whose inputs failed.

Importing this package loads only the standard library: the engine, the planner and the
Transformer load when first used.
"""

import importlib
from typing import TYPE_CHECKING, Any

from batchinfer.errors import BatchInferError, InputError, OutputNotEmpty, ValidationError

if TYPE_CHECKING:
    from batchinfer.api import JobFailed, TransformKeywords, plan, run
    from batchinfer.engine.job_result import FileResult, JobInterrupted, JobResult
    from batchinfer.planning.job_plan import Plan
    from batchinfer.transformer import Transformer

# name -> the module that defines it, imported when the name is first used
_LAZY = {
    "run": "batchinfer.api",
    "plan": "batchinfer.api",
    "JobFailed": "batchinfer.api",
    "TransformKeywords": "batchinfer.api",
    "Transformer": "batchinfer.transformer",
    "JobResult": "batchinfer.engine.job_result",
    "FileResult": "batchinfer.engine.job_result",
    "JobInterrupted": "batchinfer.engine.job_result",
    "Plan": "batchinfer.planning.job_plan",
}

__all__ = [
    "BatchInferError",
    "FileResult",
    "InputError",
    "JobFailed",
    "JobInterrupted",
    "JobResult",
    "OutputNotEmpty",
    "Plan",
    "TransformKeywords",
    "Transformer",
    "ValidationError",
    "plan",
    "run",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'batchinfer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
