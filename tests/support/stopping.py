"""Waiting for a run that was told to stop, and showing where it is when it does not stop."""

import subprocess
import sys
from pathlib import Path

import pytest

# C10 gives each instance 30 s between SIGTERM and SIGKILL; a loaded machine needs more.
STOP_WITHIN = 90.0


def output_once_stopped(proc: subprocess.Popen[str], within: float = STOP_WITHIN) -> str:
    """``proc``'s stderr once it has exited. One still running ``within`` seconds after it
    was told to stop fails the test with the Python stacks of it and of the processes it
    started (py-spy) and with its stderr so far; then it is killed."""
    try:
        return proc.communicate(timeout=within)[1]
    except subprocess.TimeoutExpired:
        spy = Path(sys.executable).with_name("py-spy")
        dump = [str(spy), "dump", "--subprocesses", "--pid", str(proc.pid)]
        try:
            stacks = subprocess.run(dump, capture_output=True, text=True, timeout=60)
            said = stacks.stdout + stacks.stderr
        except (OSError, subprocess.TimeoutExpired) as exc:
            said = f"(py-spy could not show them: {exc})"
        proc.kill()
        stderr = proc.communicate()[1]
        pytest.fail(
            f"still running {within:g} s after it was told to stop\n"
            f"--- its stacks:\n{said}\n--- its stderr:\n{stderr}"
        )
