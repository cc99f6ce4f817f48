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

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from batchinfer.engine.file_queue import files_at_once, take_files
from batchinfer.engine.http_client import ModelServerClient
from batchinfer.engine.inputs import InputFile, Units, resolve_units
from batchinfer.engine.local_instances import local_instances
from batchinfer.engine.outcomes import EngineReport, FileOutcome, Progress, transform_input
from batchinfer.serving.launcher import ServerProcess, start_server
from batchinfer.transform.settings import TransformSettings

SERVER_START_TIMEOUT = 120.0


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
    instances, env = local_instances(settings, workers_per_instance)
    servers: list[ServerProcess] = []
    started = time.perf_counter()
    try:
        for instance in instances:
            servers.append(
                start_server(
                    model_dir, workers=instance.workers, env={**env, **instance.environment}
                )
            )
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

        at_once = files_at_once(settings.split_type, effective.max_concurrent_transforms)
        outcomes = take_files(
            files, len(clients), work, progress, lambda: _stop_all(servers, clients), at_once
        )
        return EngineReport(effective, outcomes, startup_seconds=startup)
    finally:
        _stop_all(servers)


def _stop_all(servers: list[ServerProcess], clients: Sequence[ModelServerClient] = ()) -> None:
    """Stop every server at once (C10: the container gets SIGTERM, then SIGKILL 30 s later); a
    stopped one is left as it is. ``clients`` start no request after this, not even a retry of
    one the stop cut short: their servers' ports may be another process's soon after."""
    for client in clients:
        client.close()
    with ThreadPoolExecutor(max(1, len(servers))) as stopping:
        list(stopping.map(lambda server: server.stop(), servers))
