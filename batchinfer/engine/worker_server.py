"""Where a processing instance's workers come from: its forkserver, started as the instance
begins, with the modules every worker imports before it loads the model (the handlers,
NumPy, Arrow, and the model's library where it can be shared:
:mod:`batchinfer.serving.fork_imports`) imported in it while the instance is still importing
its own; each worker forked from it has them already."""

import os
from collections.abc import Mapping
from multiprocessing import forkserver, get_context
from pathlib import Path

from batchinfer.serving.fork_imports import shared_libraries
from batchinfer.serving.server import default_workers as serving_workers
from batchinfer.serving.server import share_cores
from batchinfer.transform.server_limits import configured_workers

WORKER_MODULES = ("batchinfer.engine.processing_job", "batchinfer.engine.forkserver_imports")
# The libraries the forkserver imports as it starts (forkserver_imports), comma-separated.
LIBRARIES_VAR = "BATCHINFER_FORKSERVER_IMPORTS"


def default_workers() -> int:
    """SAGEMAKER_MODEL_SERVER_WORKERS, as the model server takes it, else one per GPU, else
    one per core."""
    return configured_workers(os.environ) or serving_workers(os.environ)


def start_worker_server(
    workers: int, model_dir: Path, job_environment: Mapping[str, str] | None = None
) -> None:
    """Set this instance's share of the cores for ``workers`` workers in its environment,
    which the forkserver and so every worker inherits, and start the forkserver now (once:
    a second call finds it running), with the library that the workers share when there
    are several (:func:`~batchinfer.serving.fork_imports.shared_libraries` of the model
    directory ``model_dir``, the workers loading it with ``job_environment`` added to
    this process's)."""
    share_cores(workers, os.environ)
    get_context("forkserver").set_forkserver_preload(list(WORKER_MODULES))
    env = {**os.environ, **(job_environment or {})}
    os.environ[LIBRARIES_VAR] = ",".join(shared_libraries(model_dir, env, workers))
    try:
        forkserver.ensure_running()
    finally:
        os.environ.pop(LIBRARIES_VAR, None)
