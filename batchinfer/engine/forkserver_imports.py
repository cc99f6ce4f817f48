"""What a processing instance's forkserver does as it starts, beside importing the other
modules of :data:`batchinfer.engine.worker_server.WORKER_MODULES`: it keeps freed memory
for its workers' batches (:mod:`batchinfer.heap_reuse`), and imports the model library its
workers share (:mod:`batchinfer.serving.fork_imports`), which the instance names in
``LIBRARIES_VAR``.
Nothing else imports this module. multiprocessing gives a forkserver module names only, and
skips only an ImportError among them, so the library is imported here, where any failure
is left to the workers' own load to report; the variable goes with it, and no worker sees
it."""

import os

from batchinfer.engine.worker_server import LIBRARIES_VAR
from batchinfer.heap_reuse import reuse_freed_memory
from batchinfer.serving.fork_imports import import_libraries

reuse_freed_memory()
import_libraries(filter(None, os.environ.pop(LIBRARIES_VAR, "").split(",")))
