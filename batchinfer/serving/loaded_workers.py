"""Which of a model server's workers hold a loaded model, seen alike by gunicorn's master and
every worker it forks, so that ``/ping`` answers 200 only once every worker can take a
request (spec C4: no invocation is sent before ``/ping`` answers 200). TorchServe, the
server of SageMaker's PyTorch images, answers its ``/ping`` the same way: unhealthy until
each model has its workers.

Without it a job's first requests all went to the first worker to load, while the others
were still importing the model's library on the same cores.
"""

import mmap
from collections.abc import Iterable


class LoadedWorkers:
    """A byte for each of the ``workers`` worker slots, and one that says every slot was
    loaded once, in memory the master maps before it forks (shared with every worker).

    The master gives each worker it forks the lowest slot no running worker holds, cleared,
    and clears a slot as its worker exits: a worker started again after one died before
    the server was ready is waited for as the first was. Once every slot has been loaded
    the server stays ready, as it was before a worker died and was replaced; a worker
    beyond the configured count (gunicorn's TTIN) holds no slot and is not waited for."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._shared = mmap.mmap(-1, workers + 1)  # anonymous and shared: inherited by forks
        self._slot: int | None = None  # the calling worker's own

    def assign(self, held: Iterable[int | None]) -> int | None:
        """In the master, before a fork: the slot for the worker about to start (``held``:
        the slots of the workers running), cleared; None when every slot is held."""
        taken = set(held)
        slot = next((s for s in range(self.workers) if s not in taken), None)
        if slot is not None:
            self._shared[slot] = 0
        return slot

    def clear(self, slot: int | None) -> None:
        """In the master, once the worker holding ``slot`` has exited."""
        if slot is not None:
            self._shared[slot] = 0

    def claim(self, slot: int | None) -> None:
        """In a worker just forked: the slot :meth:`add` marks."""
        self._slot = slot

    def add(self) -> None:
        """In a worker: its model is loaded."""
        if self._slot is not None:
            self._shared[self._slot] = 1

    def waiting(self) -> str | None:
        """Why ``/ping`` is not 200 yet, or None once every slot has been loaded."""
        if self._shared[self.workers]:
            return None
        loaded = self._shared[: self.workers].count(1)
        if loaded < self.workers:
            return f"the model is loaded in {loaded} of {self.workers} workers"
        self._shared[self.workers] = 1
        return None
