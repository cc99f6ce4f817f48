"""A model server's workers as they start: one told to stop while it is still starting (C10:
the container gets SIGTERM, then SIGKILL 30 s later), the real gunicorn master and worker,
the worker held in its start between the fork and gunicorn's own signal handlers; and
``/ping`` answering 200 only once every worker has loaded the model (C4)."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import joblib
import pytest

from batchinfer.serving.launcher import ServerStartError, start_server
from tests.integration.serving.conftest import write_module
from tests.integration.serving.helpers import START_TIMEOUT, Client, Reply, child_pids, csv_body
from tests.support.fork_probe import LoadProbe

ROOT = Path(__file__).resolve().parents[3]  # where the probe's module is

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
    while not child_pids(master.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert child_pids(master.pid), "the master forked no worker"
    master.send_signal(signal.SIGTERM)
    _, log = master.communicate(timeout=60)
    assert master.returncode == 0, log
    assert "Worker exiting" in log and "SIGKILL" not in log, log


# A model whose second worker to load waits for the test's word: the first loads at once.
SECOND_WAITS = """
import os
import time
from pathlib import Path

import joblib


def model_fn(model_dir):
    folder = Path(model_dir)
    try:
        os.close(os.open(folder / "first-loader", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        deadline = time.monotonic() + 60
        while not (folder / "second-may-load").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    return joblib.load(folder / "model.joblib")
"""


def test_ping_answers_200_only_once_every_worker_has_loaded_the_model_c4(model_dir, example_rows):
    """Before, the first worker to load answered 200 and a job's first requests all went
    to it while the others still loaded (TorchServe's /ping too is unhealthy until each
    model has its workers)."""
    write_module(model_dir, SECOND_WAITS)
    with start_server(model_dir, workers=2) as server:
        client = Client(server.port)
        first = client.call("GET", "/ping")  # queued until the first worker has loaded
        assert (first.status, first.text) == (503, "the model is loaded in 1 of 2 workers")
        not_yet = r"not healthy within 1 s \(its last /ping: 503 the model is loaded in 1 of 2"
        with pytest.raises(ServerStartError, match=not_yet):  # the second is still waiting
            server.wait_healthy(1)
        (model_dir / "second-may-load").touch()
        server.wait_healthy(START_TIMEOUT)
        assert client.call("GET", "/ping") == Reply(200, "text/plain", b"")
        scored = client.invoke(csv_body(example_rows))
        assert scored.status == 200 and len(scored.body.splitlines()) == len(example_rows)


def _maps_scikit_learn(pid: int) -> bool:
    """Whether process ``pid`` has scikit-learn's compiled modules loaded."""
    return "/sklearn/" in Path(f"/proc/{pid}/maps").read_text()


def _probe_answers(model_dir: Path, workers: int) -> set[str]:
    """What a server of ``workers`` workers answers for the load probe (1: scikit-learn
    was imported in the worker before the model was loaded), asked once each worker."""
    joblib.dump(LoadProbe(False), model_dir / "model.joblib")
    with start_server(model_dir, workers=workers, env={"PYTHONPATH": str(ROOT)}) as server:
        server.wait_healthy(START_TIMEOUT)
        client = Client(server.port)
        return {client.invoke(b"1\n2\n").text.split()[0] for _ in range(4 * workers)}


def test_the_master_imports_the_default_loaders_library_once_for_its_workers(tmp_path):
    """A model file of scikit-learn with no user module: its workers are forked with the
    library imported (about 0.9 s of CPU each, W times for W workers before). One worker
    has nothing to share: it imports the library itself, as it loads the model."""
    assert _probe_answers(tmp_path, workers=2) == {"1"}
    assert _probe_answers(tmp_path, workers=1) == {"0"}


def test_a_user_module_makes_its_own_imports_in_each_worker_c1(model_dir, example_rows):
    """SageMaker imports the user module in each worker, and so do its imports happen."""
    write_module(
        model_dir,
        "import joblib\n\ndef model_fn(d):\n    return joblib.load(d + '/model.joblib')\n",
    )
    with start_server(model_dir, workers=2) as server:
        server.wait_healthy(START_TIMEOUT)
        assert not _maps_scikit_learn(server.process.pid)
        assert Client(server.port).invoke(csv_body(example_rows)).status == 200
