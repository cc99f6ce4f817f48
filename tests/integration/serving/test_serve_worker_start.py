"""A model server told to stop while its worker is still starting (C10: the container gets
SIGTERM, then SIGKILL 30 s later): the real gunicorn master and worker, the worker held in
its start between the fork and gunicorn's own signal handlers."""

import signal
import subprocess
import sys
import time
from pathlib import Path

# The server as `batchinfer serve` builds it, its worker's start slowed down just after the
# fork: a SIGTERM the master forwards then reaches the worker before its own handlers.
SLOW_START = """
import sys
import time
from pathlib import Path

from batchinfer.serving import server

app = server._gunicorn_application(server.ServeSettings(Path(sys.argv[1]), "127.0.0.1", 0, 1))
start_worker = app.cfg.post_fork


def slow_start(arbiter, worker):
    start_worker(arbiter, worker)
    time.sleep(3)


app.cfg.set("post_fork", slow_start)
app.run()
"""


def _children(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


def test_a_worker_told_to_stop_as_it_starts_exits_on_its_own_not_killed_by_its_master_c10(
    example_model_dir,
):
    """Before, the signal went into the worker's copy of the master's queue; the worker
    served on and the master killed it once its 25 s graceful timeout had passed."""
    master = subprocess.Popen(
        [sys.executable, "-c", SLOW_START, str(example_model_dir)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not _children(master.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _children(master.pid), "the master forked no worker"
    master.send_signal(signal.SIGTERM)
    _, log = master.communicate(timeout=60)
    assert master.returncode == 0, log
    assert "Worker exiting" in log and "SIGKILL" not in log, log
