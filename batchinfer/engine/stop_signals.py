"""SIGTERM and SIGHUP stop a local job as Ctrl-C does.

``timeout``, CI cancellation, ``kill`` and Kubernetes send SIGTERM; closing a terminal sends
SIGHUP. Either raises :class:`Stopped` (a KeyboardInterrupt) in the main thread, so the
engine stops its instances, removes what is not whole and records the run as interrupted,
exactly as after Ctrl-C; the command then exits 128 + the signal's number, as shells report
a process the signal ended (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
"""

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """A stop signal other than SIGINT reached the job."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stop_like_ctrl_c() -> Iterator[list[int]]:
    """Within the block, the first SIGTERM or SIGHUP raises :class:`Stopped`; later ones are
    ignored while the job cleans up (``kill -9`` still ends it). Yields the list of signals
    received (empty after a plain Ctrl-C). Main thread only, as Python's signal handlers are."""
    received: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        if len(received) == 1:
            raise Stopped(signum)

    previous = {number: signal.signal(number, stop) for number in STOP_SIGNALS}
    try:
        yield received
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def exit_code(received: list[int]) -> int:
    """128 + the number of the signal that stopped the job: SIGINT's when none was received."""
    return 128 + (received[0] if received else signal.SIGINT)
