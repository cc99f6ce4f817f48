"""The transform engine: model servers on localhost doing what Batch Transform instances do.

It starts ``instance_count`` real model servers (C1-C4), resolves the effective batch
settings from the job and the first server's /execution-parameters (R10), and lets each
instance take whole files from a shared queue (R3: one file, one instance), sending up to
MaxConcurrentTransforms requests at a time (R9). Each file is framed, processed and
assembled by :func:`batchinfer.transform.file_transform.transform_file`, which writes its
``.out`` only when every record succeeded (R19).
"""

import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from batchinfer.engine.http_client import ModelServerClient
from batchinfer.engine.inputs import InputFile
from batchinfer.engine.outcomes import (
    EngineInterrupted,
    EngineReport,
    FileOutcome,
    Progress,
    transform_input,
)
from batchinfer.serving.launcher import ServerProcess, start_server
from batchinfer.serving.server import native_thread_limits
from batchinfer.transform.settings import EffectiveSettings, TransformSettings

SERVER_START_TIMEOUT = 120.0


def default_workers_per_instance(instance_count: int) -> int:
    """Server workers per instance so that all instances together use every core."""
    return max(1, (os.cpu_count() or 1) // instance_count)


def run_transform(
    files: list[InputFile],
    output_dir: Path,
    *,
    model_dir: Path,
    settings: TransformSettings,
    workers_per_instance: int | None = None,
    progress: Progress | None = None,
) -> EngineReport:
    """Run ``files`` through ``settings.instance_count`` local model servers. Ctrl-C stops
    them all and raises EngineInterrupted with the files done before it."""
    progress = progress or Progress()
    workers = workers_per_instance or default_workers_per_instance(settings.instance_count)
    env = {
        **native_thread_limits(settings.instance_count * workers, os.environ),
        **settings.container_environment({}),
    }
    servers: list[ServerProcess] = []
    started = time.perf_counter()
    try:
        for _ in range(settings.instance_count):
            servers.append(start_server(model_dir, workers=workers, env=env))
        for server in servers:
            server.wait_healthy(SERVER_START_TIMEOUT)  # C4: nothing is sent before /ping is 200
        startup = round(time.perf_counter() - started, 3)
        progress.instances_ready(len(servers))
        clients = [
            ModelServerClient(
                server.port,
                content_type=settings.content_type,
                accept=settings.accept,
                timeout=float(settings.invocations_timeout_seconds),
            )
            for server in servers
        ]
        effective = settings.resolve(clients[0].execution_parameters())
        outcomes = _process_files(
            files,
            output_dir,
            clients,
            settings,
            effective,
            progress,
            on_interrupt=lambda: _stop_all(servers),
        )
        return EngineReport(effective, outcomes, startup_seconds=startup)
    finally:
        _stop_all(servers)


def _stop_all(servers: list[ServerProcess]) -> None:
    """Stop every server at once (C10); a stopped one is left as it is."""
    with ThreadPoolExecutor(max(1, len(servers))) as stopping:
        list(stopping.map(lambda server: server.stop(), servers))


def _process_files(
    files: list[InputFile],
    output_dir: Path,
    clients: list[ModelServerClient],
    settings: TransformSettings,
    effective: EffectiveSettings,
    progress: Progress,
    on_interrupt: Callable[[], None],
) -> list[FileOutcome]:
    """Each instance thread takes the next whole file until none is left (R3). On Ctrl-C
    no instance takes another file, ``on_interrupt`` ends the requests in flight, and
    EngineInterrupted carries the files done before it."""
    pending: queue.SimpleQueue[InputFile] = queue.SimpleQueue()
    for file in files:
        pending.put(file)
    outcomes: dict[str, FileOutcome] = {}
    lock = threading.Lock()

    crashed: list[BaseException] = []  # not a file's failure: a fault of the engine itself
    interrupted = threading.Event()

    def instance_loop(instance: int, client: ModelServerClient) -> None:
        try:
            while not crashed and not interrupted.is_set():
                try:
                    file = pending.get_nowait()
                except queue.Empty:
                    return
                progress.file_started(instance, file)
                outcome = transform_input(
                    file,
                    output_dir,
                    instance=instance,
                    invoke=client.invoke,
                    settings=settings,
                    effective=effective,
                    concurrency=effective.max_concurrent_transforms,
                    progress=progress,
                )
                with lock:
                    if interrupted.is_set():  # it may have failed only because of Ctrl-C
                        return
                    outcomes[file.name] = outcome
                progress.file_finished(outcome)
        except BaseException as exc:
            crashed.append(exc)

    threads = [
        threading.Thread(target=instance_loop, args=(i, c), name=f"instance-{i + 1}", daemon=True)
        for i, c in enumerate(clients)
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)  # short joins keep Ctrl-C responsive
    except KeyboardInterrupt:
        with lock:
            interrupted.set()
            finished = list(outcomes.values())
        on_interrupt()
        for thread in threads:
            thread.join()
        raise EngineInterrupted(finished) from None
    if crashed:
        raise crashed[0]
    return [outcomes[file.name] for file in files]
