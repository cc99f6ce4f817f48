"""A model server's worker and the stop signals that reach it while it starts (C10: the
container gets SIGTERM, then SIGKILL 30 s later)."""

import os
import queue
import signal
from types import SimpleNamespace

import pytest
from gunicorn.arbiter import Arbiter

from batchinfer.serving import server
from batchinfer.serving.loaded_workers import LoadedWorkers


def _worker_told(monkeypatch: pytest.MonkeyPatch, *signums: int) -> SimpleNamespace:
    """A worker started by a master whose queue held a SIGCHLD at the fork, sent ``signums``
    before gunicorn gave it its own handlers (the master's, inherited, queue them), and then
    initialised."""
    monkeypatch.setattr(server, "die_with_parent", lambda parent: None)  # no prctl in pytest
    master = SimpleNamespace(SIG_QUEUE=queue.SimpleQueue())
    master.SIG_QUEUE.put(signal.SIGCHLD)
    worker = SimpleNamespace(alive=True, ppid=os.getppid(), slot=0)
    inherited = {s: signal.signal(s, lambda n, f: Arbiter.signal(master, n, f)) for s in signums}
    try:
        server._start_worker(LoadedWorkers(1), master, worker)
        for signum in signums:
            signal.raise_signal(signum)
    finally:
        for signum, handler in inherited.items():
            signal.signal(signum, handler)
    server._stop_if_told_before_init(worker)
    return worker


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGQUIT])
def test_a_stop_signal_before_the_workers_own_handlers_stops_it_before_it_serves_c10(
    monkeypatch, signum
):
    """Sent between the fork and gunicorn's own handlers, the signal went into the worker's
    copy of the master's queue; the worker stops on it before it accepts a request, where
    it would otherwise serve on until the master killed it 25 s later."""
    assert _worker_told(monkeypatch, signum).alive is False


def test_a_worker_told_nothing_or_only_of_a_child_serves(monkeypatch):
    assert _worker_told(monkeypatch).alive is True
    assert _worker_told(monkeypatch, signal.SIGUSR1).alive is True
