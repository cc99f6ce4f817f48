"""How many of a model server's workers have loaded the model, counted across the processes
gunicorn forks, so that ``/ping`` answers 200 only once every worker can take a request
(spec C4: no invocation is sent before ``/ping`` answers 200). TorchServe, the server of
SageMaker's PyTorch images, answers its ``/ping`` the same way: unhealthy until each
model has its workers.

Without it a job's first requests all went to the first worker to load, while the others
were still importing the model's library on the same cores.
"""

import fcntl
import os
import tempfile


class LoadedWorkers:
    """A count shared by a server's master and the workers it forks: one byte appended to
    an unlinked file for each worker that loaded (appends of one byte never interleave),
    its size read back. Made by the master before it forks, so every worker inherits it;
    a worker started again after one died adds to it too."""

    def __init__(self, workers: int) -> None:
        fd, path = tempfile.mkstemp(prefix="batchinfer-loaded-")
        os.unlink(path)  # nothing to remove later: the file goes with its last descriptor
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        self.workers = workers
        self._fd = fd

    def add(self) -> None:
        """Count the calling worker's model as loaded."""
        os.write(self._fd, b"1")

    def waiting(self) -> str | None:
        """Why ``/ping`` is not 200 yet, or None once as many loads as workers are counted."""
        loaded = os.fstat(self._fd).st_size
        if loaded >= self.workers:
            return None
        return f"the model is loaded in {loaded} of {self.workers} workers"
