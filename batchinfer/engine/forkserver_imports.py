"""What a processing instance's forkserver imports as it starts, beside the other modules of
:data:`batchinfer.engine.worker_server.WORKER_MODULES`: the model library its workers share
(:mod:`batchinfer.serving.fork_imports`), for the model directory the instance names in
``MODEL_DIR_VAR``. Nothing else imports this module. multiprocessing gives a forkserver
module names only, and skips only an ImportError among them, so the library is imported
here, where any failure is left to the workers' own load to report; the variable goes with
it, and no worker sees it."""

import os
from pathlib import Path

from batchinfer.engine.worker_server import MODEL_DIR_VAR
from batchinfer.serving.fork_imports import import_shared

_model_dir = os.environ.pop(MODEL_DIR_VAR, None)
if _model_dir:
    import_shared(Path(_model_dir), os.environ)
