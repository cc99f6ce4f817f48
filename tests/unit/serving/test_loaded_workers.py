"""The count behind a model server's ``/ping`` (C4: no invocation is sent before ``/ping``
answers 200): which worker slots hold a loaded model, as gunicorn's master hands the slots
out before each fork, takes them back as workers exit and says how many workers it wants."""

import os
from types import SimpleNamespace

from batchinfer.serving import server
from batchinfer.serving.loaded_workers import LoadedWorkers


class Master:
    """gunicorn's master as the hooks see it: its running workers by process id."""

    def __init__(self, loaded: LoadedWorkers) -> None:
        self.loaded, self.WORKERS, self._pids = loaded, {}, iter(range(100, 10**6))

    def fork(self) -> SimpleNamespace:
        worker = SimpleNamespace()
        server._before_fork(self.loaded, self, worker)
        self.WORKERS[next(self._pids)] = worker
        return worker

    def reap(self, worker: SimpleNamespace) -> None:
        pid = next(p for p, w in self.WORKERS.items() if w is worker)
        server._worker_exited(self.loaded, self, self.WORKERS.pop(pid))

    def want(self, workers: int) -> None:
        server._workers_wanted(self.loaded, self, workers, None)


def _loads(loaded: LoadedWorkers, worker: SimpleNamespace) -> None:
    """What the worker does in its own process: claim its slot, load, mark it."""
    loaded.claim(worker.slot)
    loaded.add()


def test_ping_waits_for_every_worker_and_names_how_many_have_loaded_c4():
    loaded = LoadedWorkers(3)
    master = Master(loaded)
    workers = [master.fork() for _ in range(3)]
    assert [w.slot for w in workers] == [0, 1, 2]
    assert loaded.waiting() == "the model is loaded in 0 of 3 workers"
    _loads(loaded, workers[2])
    _loads(loaded, workers[0])
    assert loaded.waiting() == "the model is loaded in 2 of 3 workers"
    _loads(loaded, workers[1])
    assert loaded.waiting() is None


def test_a_worker_that_died_before_the_server_was_ready_is_waited_for_again_c4():
    """Counting loads instead of slots, the replacement's load made two of two while the
    other worker was still loading."""
    loaded = LoadedWorkers(2)
    master = Master(loaded)
    first, second = master.fork(), master.fork()
    _loads(loaded, first)
    master.reap(first)
    assert loaded.waiting() == "the model is loaded in 0 of 2 workers"
    replacement = master.fork()
    assert replacement.slot == first.slot
    _loads(loaded, replacement)
    assert loaded.waiting() == "the model is loaded in 1 of 2 workers"
    _loads(loaded, second)
    assert loaded.waiting() is None


def test_once_ready_the_server_stays_ready_while_a_worker_is_replaced():
    loaded = LoadedWorkers(2)
    master = Master(loaded)
    workers = [master.fork() for _ in range(2)]
    for worker in workers:
        _loads(loaded, worker)
    assert loaded.waiting() is None
    master.reap(workers[0])
    assert loaded.waiting() is None


def test_a_reload_before_the_server_was_ready_waits_for_the_new_workers():
    """gunicorn's reload (HUP) forks the new workers beside the old, then stops the old."""
    loaded = LoadedWorkers(2)
    master = Master(loaded)
    old = [master.fork(), master.fork()]
    _loads(loaded, old[0])
    master.want(2)
    new = [master.fork(), master.fork()]
    assert [w.slot for w in new] == [2, 3]
    for worker in old:
        master.reap(worker)
    _loads(loaded, new[1])
    assert loaded.waiting() == "the model is loaded in 1 of 2 workers"
    _loads(loaded, new[0])
    assert loaded.waiting() is None


def test_the_workers_waited_for_follow_the_count_the_master_wants():
    """TTOU: one worker fewer, and the server is ready with it; TTIN: one more, waited for."""
    loaded = LoadedWorkers(2)
    master = Master(loaded)
    kept, dropped = master.fork(), master.fork()
    master.want(1)
    master.reap(dropped)
    _loads(loaded, kept)
    assert loaded.waiting() is None
    more = LoadedWorkers(1)
    master = Master(more)
    only = master.fork()
    master.want(2)
    extra = master.fork()
    _loads(more, only)
    assert more.waiting() == "the model is loaded in 1 of 2 workers"
    _loads(more, extra)
    assert more.waiting() is None


def test_the_slots_are_shared_with_a_forked_worker():
    loaded = LoadedWorkers(1)
    worker = Master(loaded).fork()
    child = os.fork()
    if child == 0:  # the worker's process: mark its slot, and leave whatever happens
        code = 1
        try:
            _loads(loaded, worker)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert loaded.waiting() is None
