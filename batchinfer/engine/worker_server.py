"""Where a processing instance's workers come from: its forkserver, started as the instance
begins, with the modules every worker imports before it loads the model (the handlers,
NumPy, Arrow, and the model's library where it can be shared:
:mod:`batchinfer.serving.fork_imports`) imported in it while the instance is still importing
its own; each worker forked from it has them already."""

import os
from multiprocessing import forkserver, get_context
from pathlib import Path

from batchinfer.serving.server import default_workers as serving_workers
from batchinfer.serving.server import share_cores
from batchinfer.transform.server_limits import configured_workers

WORKER_MODULES = ("batchinfer.engine.processing_job", "batchinfer.engine.forkserver_imports")
# The model directory whose library the forkserver imports (forkserver_imports), while it starts.
MODEL_DIR_VAR = "BATCHINFER_FORKSERVER_MODEL_DIR"


def default_workers() -> int:
    """SAGEMAKER_MODEL_SERVER_WORKERS, as the model server takes it, else one per GPU, else
    one per core."""
    return configured_workers(os.environ) or serving_workers(os.environ)


def start_worker_server(workers: int, model_dir: Path) -> None:
    """Set this instance's share of the cores for ``workers`` workers in its environment,
    which the forkserver and so every worker inherits, and start the forkserver now (once:
    a second call finds it running), with the library the workers of the model in
    ``model_dir`` share, if several (a directory; an archive not yet extracted names none)."""
    share_cores(workers, os.environ)
    get_context("forkserver").set_forkserver_preload(list(WORKER_MODULES))
    if workers > 1 and model_dir.is_dir():
        os.environ[MODEL_DIR_VAR] = str(model_dir)
    try:
        forkserver.ensure_running()
    finally:
        os.environ.pop(MODEL_DIR_VAR, None)
