"""A child that asks to die with its parent does, even after ``kill -9`` of the parent."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from batchinfer.parent_death import PARENT_PID_VAR, child_of_this_process

# A parent that starts a child, which prints its pid once it asked to die with its parent.
PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    CHILD = (
        "import os, time; from batchinfer.parent_death import die_with_parent; "
        "die_with_parent(os.getppid()); print(os.getpid(), flush=True); time.sleep(600)"
    )
    subprocess.Popen([sys.executable, "-c", CHILD])
    time.sleep(600)
    """
)
STARTED = (
    "import os, sys; from batchinfer.parent_death import die_with_starter; "
    "die_with_starter(os.environ, lambda signum, _frame: sys.exit(128 + signum)); "
    "print('ran on')"
)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie (dead, not yet reaped by its new parent) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_child_dies_with_its_parent_killed_with_sigkill():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _running(child)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(child)


def test_a_process_dies_with_another_that_is_not_its_parent():
    """A pool worker watches the job's process, though a forkserver forked it."""
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    watching = (
        "import sys, time; from batchinfer.parent_death import die_with; "
        "die_with(int(sys.argv[1])); print('watching', flush=True); time.sleep(600)"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", watching, str(job.pid)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline() == "watching\n"
        job.kill()
        assert worker.wait(timeout=30) == -signal.SIGTERM
    finally:
        job.kill()
        worker.kill()
        job.wait()
    gone = subprocess.run(
        [sys.executable, "-c", watching, str(job.pid)], capture_output=True, text=True
    )
    assert gone.returncode == -signal.SIGTERM and gone.stdout == ""


def test_a_child_whose_starter_is_gone_already_stops_at_once():
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    env = {**os.environ, PARENT_PID_VAR: gone.stdout.strip()}
    late = subprocess.run([sys.executable, "-c", STARTED], env=env, capture_output=True, text=True)
    assert late.returncode == 128 + signal.SIGQUIT and late.stdout == ""  # its handler ran


def test_a_child_of_a_live_starter_or_of_none_runs():
    unstarted = {name: value for name, value in os.environ.items() if name != PARENT_PID_VAR}
    for env in (child_of_this_process(os.environ), unstarted):
        ran = subprocess.run(
            [sys.executable, "-c", STARTED], env=env, capture_output=True, text=True
        )
        assert ran.returncode == 0 and ran.stdout == "ran on\n", ran.stderr
