"""Instances taking whole files from one queue until none is left (R3: one file, one
instance), as Batch Transform's instances do, several at once where a file is one request;
the engines use it."""

import queue
import threading
from collections.abc import Callable

from batchinfer.engine.inputs import InputFile
from batchinfer.engine.outcomes import EngineInterrupted, FileOutcome, Progress

# Runs one whole file on one instance; a failure of the file is an outcome, not an error.
Work = Callable[[int, InputFile], FileOutcome]


def _nothing() -> None:
    return None


def files_at_once(split_type: str, requests_in_flight: int) -> int:
    """The files an instance works on at once: with SplitType None a file is one request,
    so its MaxConcurrentTransforms requests in flight (R9: parallel requests per instance)
    are as many files; otherwise one file, whose batches fill them."""
    return max(1, requests_in_flight) if split_type == "None" else 1


def take_files(
    files: list[InputFile],
    instances: int,
    work: Work,
    progress: Progress,
    on_interrupt: Callable[[], None] = _nothing,
    at_once: int = 1,
) -> list[FileOutcome]:
    """``work(instance, file)`` for every file, ``at_once`` threads of each of ``instances``
    taking the next whole file until none is left; the outcomes in the order of ``files``
    (:func:`files_at_once` says how many at once). An exception from
    ``work`` is a fault of the engine itself: the other instances stop taking files and it
    is raised. On Ctrl-C no instance takes another file, ``on_interrupt`` ends the requests
    in flight, and EngineInterrupted carries the files done before it."""
    pending: queue.SimpleQueue[InputFile] = queue.SimpleQueue()
    for file in files:
        pending.put(file)
    outcomes: dict[str, FileOutcome] = {}
    lock = threading.Lock()
    crashed: list[BaseException] = []
    interrupted = threading.Event()

    def instance_loop(instance: int, thread: int) -> None:
        try:
            while not crashed and not interrupted.is_set():
                try:
                    file = pending.get_nowait()
                except queue.Empty:
                    return
                progress.file_started(instance, file)
                outcome = work(instance, file)
                with lock:
                    if interrupted.is_set():  # it may have failed only because of Ctrl-C
                        return
                    outcomes[file.name] = outcome
                progress.file_finished(outcome)
        except BaseException as exc:
            crashed.append(exc)
        finally:
            ended[thread].set()

    # Each instance says when it has ended: a join that Ctrl-C interrupts may take a thread
    # that still runs for one that has ended (Python 3.11), so joins are not waited on.
    ended = [threading.Event() for _ in range(instances * at_once)]
    for i in range(instances * at_once):
        threading.Thread(
            target=instance_loop, args=(i % instances, i), name=f"instance-{i % instances + 1}",
            daemon=True,
        ).start()  # fmt: skip
    try:
        for end in ended:
            while not end.wait(0.2):  # short waits keep Ctrl-C responsive
                pass
    except KeyboardInterrupt:
        with lock:
            interrupted.set()
            finished = list(outcomes.values())
        on_interrupt()
        for end in ended:
            end.wait()
        raise EngineInterrupted(finished) from None
    if crashed:
        raise crashed[0]
    return [outcomes[file.name] for file in files]
