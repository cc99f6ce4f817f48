"""The count behind a model server's ``/ping`` (C4: no invocation is sent before ``/ping``
answers 200): which worker slots hold a loaded model, as gunicorn's master hands the slots
out before each fork and takes them back as workers exit."""

import os
from types import SimpleNamespace

from batchinfer.serving import server
from batchinfer.serving.loaded_workers import LoadedWorkers


def _forked(loaded: LoadedWorkers, running: dict[int, SimpleNamespace]) -> SimpleNamespace:
    """A worker as the master's pre_fork hook leaves it, added to ``running``."""
    worker = SimpleNamespace()
    server._before_fork(loaded, SimpleNamespace(WORKERS=running), worker)
    running[len(running) + 100] = worker
    return worker


def _loads(loaded: LoadedWorkers, worker: SimpleNamespace) -> None:
    """What the worker does in its own process: claim its slot, load, mark it."""
    loaded.claim(worker.slot)
    loaded.add()


def test_ping_waits_for_every_slot_and_names_how_many_have_loaded_c4():
    loaded, running = LoadedWorkers(3), {}
    workers = [_forked(loaded, running) for _ in range(3)]
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
    loaded, running = LoadedWorkers(2), {}
    first, second = _forked(loaded, running), _forked(loaded, running)
    _loads(loaded, first)
    pid = next(p for p, w in running.items() if w is first)
    server._worker_exited(loaded, None, running.pop(pid))  # reaped by the master
    assert loaded.waiting() == "the model is loaded in 0 of 2 workers"
    replacement = _forked(loaded, running)
    assert replacement.slot == first.slot
    _loads(loaded, replacement)
    assert loaded.waiting() == "the model is loaded in 1 of 2 workers"
    _loads(loaded, second)
    assert loaded.waiting() is None


def test_once_ready_the_server_stays_ready_while_a_worker_is_replaced():
    loaded, running = LoadedWorkers(2), {}
    workers = [_forked(loaded, running) for _ in range(2)]
    for worker in workers:
        _loads(loaded, worker)
    assert loaded.waiting() is None
    server._worker_exited(loaded, None, workers[0])
    assert loaded.waiting() is None


def test_a_worker_beyond_the_configured_count_holds_no_slot():
    loaded, running = LoadedWorkers(1), {}
    only, extra = _forked(loaded, running), _forked(loaded, running)  # gunicorn's TTIN
    assert (only.slot, extra.slot) == (0, None)
    _loads(loaded, extra)
    assert loaded.waiting() == "the model is loaded in 0 of 1 workers"
    _loads(loaded, only)
    assert loaded.waiting() is None


def test_the_slots_are_shared_with_a_forked_worker():
    loaded, running = LoadedWorkers(1), {}
    worker = _forked(loaded, running)
    child = os.fork()
    if child == 0:  # the worker's process
        _loads(loaded, worker)
        os._exit(0)
    os.waitpid(child, 0)
    assert loaded.waiting() is None
