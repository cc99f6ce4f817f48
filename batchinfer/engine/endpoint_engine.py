"""The endpoint engine, locally: every input scored through a server that already runs, at
``--endpoint-url``, over the container contract (POST ``<url>/invocations`` with the job's
Content-Type and Accept, C3: the container serves HTTP on port 8080; C7: the job's ContentType and
Accept become request headers), e.g. ``batchinfer serve`` or a model container.

``instance_count`` files are scored at once, each taken whole from one queue (R3: each input object
goes whole to one instance) and scored by :func:`batchinfer.endpoints.scoring.score_file` with up to
MaxConcurrentTransforms requests in flight, so its ``.out`` is what a transform job writes.
"""

import threading
import time
from pathlib import Path

from batchinfer.endpoints.scoring import (
    REALTIME_TIMEOUT_SECONDS,
    endpoint_retry,
    endpoint_settings,
    partial_output,
    score_file,
)
from batchinfer.engine.file_queue import take_files
from batchinfer.engine.http_client import ModelServerClient
from batchinfer.engine.inputs import InputFile
from batchinfer.engine.outcomes import (
    EngineReport,
    FileOutcome,
    Progress,
    file_outcome,
    file_progress,
)
from batchinfer.errors import BatchInferError, ValidationError
from batchinfer.transform.bad_records import errors_name
from batchinfer.transform.csv_dialect import custom_attributes
from batchinfer.transform.file_transform import FileStats
from batchinfer.transform.record_errors import InvocationError
from batchinfer.transform.settings import TransformSettings

# How long a server whose /ping answers 503 or times out (its workers still loading the
# model) is waited for before the run is refused; one that refuses connections (not
# listening yet: `batchinfer serve &` just started) for less, as that is also a wrong URL;
# and how often either is asked meanwhile.
WARMING_SECONDS = 120.0
STARTING_SECONDS = 15.0
_WARMING_POLL = 0.25


def run_endpoint(
    files: list[InputFile],
    output_dir: Path,
    *,
    url: str,
    settings: TransformSettings,
    progress: Progress | None = None,
    skip_blank_lines: bool = False,
) -> EngineReport:
    """Score ``files`` through the server at ``url`` into ``output_dir``. Ctrl-C sends no
    more requests, lets those in flight finish, removes the output of every file not done
    and raises EngineInterrupted with the files done before it. ``skip_blank_lines`` drops
    empty lines."""
    progress = progress or Progress()
    effective = endpoint_settings(settings)
    client = endpoint_client(url, settings)
    started = time.perf_counter()
    check_healthy(client)
    startup = round(time.perf_counter() - started, 3)
    progress.instances_ready(settings.instance_count)
    retry = endpoint_retry(settings)
    stopping = threading.Event()

    def work(instance: int, file: InputFile) -> FileOutcome:
        started = time.perf_counter()

        def write(output: Path) -> FileStats:
            position = score_file(
                file.path,
                output,
                byte_range=(file.start, file.end),
                send=client.send,
                settings=settings,
                name=file.name,
                should_stop=stopping.is_set,
                retry=retry,
                on_bytes=file_progress(progress, instance, file),
                skip_blank_lines=skip_blank_lines,
            )
            if not position.done:
                partial_output(output).unlink(missing_ok=True)
                partial_output(output.with_name(errors_name(output.name))).unlink(missing_ok=True)
                raise BatchInferError(f"{file.name}: interrupted (Ctrl-C) before it was done")
            return position.stats(
                seconds=time.perf_counter() - started,
                records_counted=settings.counts_records,
            )

        return file_outcome(file, output_dir, instance, write)

    outcomes = take_files(files, settings.instance_count, work, progress, on_interrupt=stopping.set)
    return EngineReport(effective, outcomes, startup_seconds=startup)


def endpoint_client(url: str, settings: TransformSettings) -> ModelServerClient:
    """The client of the server at ``url`` (ValidationError names a malformed URL); a
    request may take InvocationsTimeoutInSeconds, at most the real-time 60 s (C8: a real-time
    request holds at most 6 MB and takes at most 60 s)."""
    return ModelServerClient.from_url(
        url,
        content_type=settings.content_type,
        accept=settings.accept,
        timeout=float(min(settings.invocations_timeout_seconds, REALTIME_TIMEOUT_SECONDS)),
        custom_attributes=custom_attributes(settings.job_environment),
    )


def check_healthy(client: ModelServerClient) -> None:
    """Nothing is sent before the server answers GET /ping with 200 (C4: the container is
    healthy once /ping answers 200). A server still starting is asked again: one that
    refuses the connection (not listening yet) for up to :data:`STARTING_SECONDS`, one that
    answers 503 (Service Unavailable: a ``batchinfer serve`` whose workers still load the
    model says so) or lets the ping time out (none of its workers accepts yet) for up to
    :data:`WARMING_SECONDS`. Any other answer refuses the run at once, quoting it."""
    began = time.monotonic()
    while True:
        waited = time.monotonic() - began
        try:
            status, said = client.ping()
        except InvocationError as exc:
            cause = exc.__cause__
            refused = isinstance(cause, ConnectionRefusedError) and waited < STARTING_SECONDS
            if refused or (isinstance(cause, TimeoutError) and waited < WARMING_SECONDS):
                time.sleep(_WARMING_POLL)
                continue
            raise ValidationError(f"--endpoint-url {client.url}: cannot reach it: {exc}") from None
        if status == 200:
            return
        if status != 503 or waited >= WARMING_SECONDS:
            text = said.decode("utf-8", "replace").strip()
            raise ValidationError(
                f"--endpoint-url {client.url}: GET /ping answered {status}"
                f"{f' ({text[:200]})' if text else ''}, not 200: the server is not healthy, "
                "so nothing was sent"
            )
        time.sleep(_WARMING_POLL)
