"""Which of a model server's workers hold a loaded model, seen alike by gunicorn's master and
every worker it forks, so that ``/ping`` answers 200 only once every worker can take a
request (spec C4: no invocation is sent before ``/ping`` answers 200). TorchServe, the
server of SageMaker's PyTorch images, answers its ``/ping`` the same way: unhealthy until
each model has its workers.

Without it a job's first requests all went to the first worker to load, while the others
were still importing the model's library on the same cores.
"""

import mmap
import struct
from collections.abc import Iterable

# Slots a configured worker: a reload (HUP) forks a new set of workers beside the running one.
_SLOTS_PER_WORKER = 4
_WANTED = struct.Struct("<I")  # the workers the master runs now, after the ready byte
_FIRST_SLOT = 1 + _WANTED.size


class LoadedWorkers:
    """In memory the master maps before it forks (shared with every worker): whether the
    server has been ready, how many workers the master wants now (gunicorn's
    ``nworkers_changed``: the configured count, TTIN and TTOU), and a byte a worker slot.

    The master gives each worker it forks the lowest slot no running worker holds, cleared,
    and clears a slot as its worker exits: a worker started again after one died before the
    server was ready is waited for as the first was. The server is ready once as many slots
    are loaded as workers are wanted, and then stays ready while a worker is replaced. A
    worker that dies in the moment between its last request and the master noticing is
    still counted."""

    def __init__(self, workers: int) -> None:
        self._slots = _SLOTS_PER_WORKER * workers
        self._shared = mmap.mmap(-1, _FIRST_SLOT + self._slots)  # anonymous: forks share it
        self.wanted(workers)
        self._slot: int | None = None  # the calling worker's own

    def wanted(self, workers: int) -> None:
        """In the master: it now runs ``workers`` workers."""
        _WANTED.pack_into(self._shared, 1, workers)

    def assign(self, held: Iterable[int | None]) -> int | None:
        """In the master, before a fork: the slot for the worker about to start (``held``:
        the slots of the workers running), cleared; None when every slot is held."""
        taken = set(held)
        slot = next((s for s in range(self._slots) if s not in taken), None)
        self.clear(slot)
        return slot

    def clear(self, slot: int | None) -> None:
        """In the master, once the worker holding ``slot`` has exited (or before it forks
        the worker it gives ``slot``)."""
        if slot is not None:
            self._shared[_FIRST_SLOT + slot] = 0

    def claim(self, slot: int | None) -> None:
        """In a worker just forked: the slot :meth:`add` marks."""
        self._slot = slot

    def add(self) -> None:
        """In a worker: its model is loaded."""
        if self._slot is not None:
            self._shared[_FIRST_SLOT + self._slot] = 1

    def waiting(self) -> str | None:
        """Why ``/ping`` is not 200 yet, or None once the server has been ready."""
        if self._shared[0]:
            return None
        (wanted,) = _WANTED.unpack_from(self._shared, 1)
        loaded = self._shared[_FIRST_SLOT:].count(1)
        if loaded < wanted:
            return f"the model is loaded in {loaded} of {wanted} workers"
        self._shared[0] = 1
        return None
