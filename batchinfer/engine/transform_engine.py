"""The transform engine: model servers on localhost doing what Batch Transform instances do.

It starts ``instance_count`` real model servers (C1-C4: how a container is started and found
healthy), resolves the effective batch settings from the job and the first server's
/execution-parameters (R10: the job's batch settings, else the container's, else defaults), and lets
each instance take whole files from a shared queue (R3: one file, one instance), sending up to
MaxConcurrentTransforms requests at a time (R9: each instance keeps MaxConcurrentTransforms requests
in flight). Each file is framed, processed and assembled by
:func:`batchinfer.transform.file_transform.transform_file`, which writes its ``.out`` only when
every record succeeded (R19: a file with any failed record gets no output).
"""

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from batchinfer.engine.file_queue import take_files
from batchinfer.engine.http_client import ModelServerClient
from batchinfer.engine.inputs import InputFile, Units, resolve_units
from batchinfer.engine.outcomes import EngineReport, FileOutcome, Progress, transform_input
from batchinfer.serving.launcher import ServerProcess, start_server
from batchinfer.serving.server import native_thread_limits, visible_gpus
from batchinfer.transform.server_limits import configured_workers
from batchinfer.transform.settings import TransformSettings

SERVER_START_TIMEOUT = 120.0


def default_workers_per_instance(instance_count: int) -> int:
    """Server workers per instance so that all instances together use every core."""
    return max(1, (os.cpu_count() or 1) // instance_count)


def instance_gpus(instance_count: int) -> list[list[str]]:
    """The GPUs of this machine dealt to ``instance_count`` local instances in turn (an
    instance of a machine with fewer GPUs shares one); all empty without GPUs."""
    gpus = visible_gpus(os.environ)
    if not gpus:
        return [[] for _ in range(instance_count)]
    dealt: list[list[str]] = [[] for _ in range(instance_count)]
    for n in range(max(len(gpus), instance_count)):
        dealt[n % instance_count].append(gpus[n % len(gpus)])
    return [sorted(set(share), key=gpus.index) for share in dealt]


def workers_and_environment(
    settings: TransformSettings, workers_per_instance: int | None = None
) -> tuple[int, dict[str, str]]:
    """The model workers per instance (``workers_per_instance``, else the job environment's
    SAGEMAKER_MODEL_SERVER_WORKERS, else a share of the cores) and the variables the model
    processes get: the job's environment, with native thread counts for what neither it nor
    this process's environment sets."""
    container = settings.container_environment({})
    workers = (
        workers_per_instance
        or configured_workers(container)
        or default_workers_per_instance(settings.instance_count)
    )
    processes = settings.instance_count * workers
    return workers, {**native_thread_limits(processes, {**os.environ, **container}), **container}


def run_transform(
    units: Units,
    output_dir: Path,
    *,
    model_dir: Path,
    settings: TransformSettings,
    workers_per_instance: int | None = None,
    progress: Progress | None = None,
    skip_blank_lines: bool = False,
) -> EngineReport:
    """Run ``units`` through ``settings.instance_count`` local model servers; a function
    giving them is called while the servers start. Ctrl-C stops them all and raises
    EngineInterrupted with the files done before it. ``skip_blank_lines`` drops empty lines."""
    progress = progress or Progress()
    workers, env = workers_and_environment(settings, workers_per_instance)
    servers: list[ServerProcess] = []
    started = time.perf_counter()
    try:
        chosen = workers_per_instance or configured_workers(env)
        for gpus in instance_gpus(settings.instance_count):
            # With GPUs each instance gets its own (one worker each unless told otherwise).
            pinned = {"CUDA_VISIBLE_DEVICES": ",".join(gpus)} if gpus else {}
            count = len(gpus) if gpus and not chosen else workers
            servers.append(start_server(model_dir, workers=count, env={**env, **pinned}))
        files = resolve_units(units)
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

        def work(instance: int, file: InputFile) -> FileOutcome:
            return transform_input(
                file,
                output_dir,
                instance=instance,
                invoke=clients[instance].invoke,
                settings=settings,
                effective=effective,
                concurrency=effective.max_concurrent_transforms,
                progress=progress,
                skip_blank_lines=skip_blank_lines,
            )

        outcomes = take_files(
            files, len(clients), work, progress, on_interrupt=lambda: _stop_all(servers)
        )
        return EngineReport(effective, outcomes, startup_seconds=startup)
    finally:
        _stop_all(servers)


def _stop_all(servers: list[ServerProcess]) -> None:
    """Stop every server at once (C10: the container gets SIGTERM, then SIGKILL 30 s later); a
    stopped one is left as it is."""
    with ThreadPoolExecutor(max(1, len(servers))) as stopping:
        list(stopping.map(lambda server: server.stop(), servers))
