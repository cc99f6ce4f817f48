"""Child processes that die with their parent, even one killed with ``kill -9``.

A local engine starts model servers and processing instances; they start workers of their
own. Each asks the kernel (Linux's ``PR_SET_PDEATHSIG``) for a signal once its parent is
gone, so none outlives the process that started it: no polling, and it also reaches a
process busy in native code. The kernel counts the *thread* that started a child as its
parent: start such children from a thread that lives as long as they do (the main thread).
A process started on another's behalf (a pool worker that a forkserver forks, from whatever
thread asked for it) watches that process instead, with :func:`die_with`.
"""

import ctypes
import os
import select
import signal
import threading
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

# Set for a child the local engine starts: the engine's process id. The child dies with it.
PARENT_PID_VAR = "BATCHINFER_PARENT_PID"
_PR_SET_PDEATHSIG = 1
# A signal handler, as signal.signal takes one.
OrphanHandler = Callable[[int, FrameType | None], Any]


def child_of_this_process(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a child that :func:`die_with_starter` ties to this process."""
    return {**env, PARENT_PID_VAR: str(os.getpid())}


def die_with_parent(parent: int, signum: int = signal.SIGTERM) -> None:
    """Have the kernel send ``signum`` to this process once ``parent``, the process that
    forked it, is gone; send it now if ``parent`` is gone already (this process then has
    another parent: the dead one's children are adopted at once)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_PDEATHSIG): {os.strerror(error)}")
    if os.getppid() != parent:
        os.kill(os.getpid(), signum)


def die_with_starter(env: Mapping[str, str], on_gone: OrphanHandler) -> None:
    """SIGQUIT, handled by ``on_gone``, once the engine that started this process (``env``
    names it) is gone; nothing when no engine started it (a container's entrypoint, a
    command a user runs). With the engine gone, no answer of this process has a reader left,
    so it stops without waiting for its requests in flight: SIGQUIT is a model server's quick
    stop (gunicorn's, once it runs). ``on_gone`` handles SIGQUIT from now on, before the
    signal can come: its default action dumps core."""
    signal.signal(signal.SIGQUIT, on_gone)
    starter = env.get(PARENT_PID_VAR)
    if starter:
        die_with_parent(int(starter), signal.SIGQUIT)


def die_with(process: int, signum: int = signal.SIGTERM) -> None:
    """Send ``signum`` to this process once ``process`` (any process, not only its parent) has
    ended, or now if it has already: a daemon thread waits on a pidfd of it."""
    try:
        watched = os.pidfd_open(process)
    except ProcessLookupError:
        os.kill(os.getpid(), signum)
        return

    def wait() -> None:
        select.select([watched], [], [])  # a pidfd is readable once its process has ended
        os.kill(os.getpid(), signum)

    threading.Thread(target=wait, name=f"die-with-{process}", daemon=True).start()
