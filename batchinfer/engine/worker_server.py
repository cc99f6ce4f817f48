"""Where a processing instance's workers come from: its forkserver, started as the instance
begins, with the modules every worker imports before it loads the model (the handlers,
NumPy, Arrow) imported in it while the instance is still importing its own; each worker
forked from it has them already."""

import os
from multiprocessing import forkserver, get_context

from batchinfer.serving.server import default_workers as serving_workers
from batchinfer.serving.server import share_cores
from batchinfer.transform.server_limits import configured_workers

WORKER_MODULES = ("batchinfer.engine.processing_job",)


def default_workers() -> int:
    """SAGEMAKER_MODEL_SERVER_WORKERS, as the model server takes it, else one per GPU, else
    one per core."""
    return configured_workers(os.environ) or serving_workers(os.environ)


def start_worker_server(workers: int) -> None:
    """Set this instance's share of the cores for ``workers`` workers in its environment,
    which the forkserver and so every worker inherits, and start the forkserver now (once:
    a second call finds it running)."""
    share_cores(workers, os.environ)
    get_context("forkserver").set_forkserver_preload(list(WORKER_MODULES))
    forkserver.ensure_running()
