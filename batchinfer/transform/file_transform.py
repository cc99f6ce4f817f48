"""One file through a transform job: frame, filter, invoke, join, assemble (R5-R19).

``invoke`` sends one request body and returns the response body: an HTTP client for the
local engine, an in-process handler for processing mode. It enforces the invocation timeout
itself and raises InvocationError; this module retries the retryable ones (5xx, timeouts,
lost connections) up to InvocationsMaxRetries times (R20) and never retries the others
(4xx). Up to ``concurrency`` requests are in flight (R9); outputs are written in input
order (R14) whatever order the responses arrive in.
"""

import gzip
import os
import secrets
import time
import zlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from batchinfer.errors import InputError
from batchinfer.transform.assemble import assemble, output_records
from batchinfer.transform.dataprocessing import DataProcessing
from batchinfer.transform.record_errors import InvocationError, RecordError
from batchinfer.transform.records import Batch, frame, read_into
from batchinfer.transform.settings import EffectiveSettings, TransformSettings

# Sends one request body and returns the response body; called from up to ``concurrency``
# threads at once, so it must be thread-safe.
Invoke = Callable[[bytes], bytes]
# Told, after each request's output is written, how many bytes of the file are done so far.
OnBytes = Callable[[int], None]

RETRY_BACKOFF_SECONDS = 0.1


@dataclass(frozen=True)
class FileStats:
    """What one file's transform did. ``bytes_in`` counts decompressed input bytes;
    ``records_out`` is None where output records cannot be counted (R17: see
    ``TransformSettings.records_not_counted``)."""

    records_in: int
    records_out: int | None
    bytes_in: int
    bytes_out: int
    requests: int
    seconds: float


def transform_stream(
    source: BinaryIO,
    sink: BinaryIO,
    *,
    settings: TransformSettings,
    effective: EffectiveSettings,
    invoke: Invoke,
    name: str,
    concurrency: int | None = None,
    retry_backoff_seconds: float = RETRY_BACKOFF_SECONDS,
    on_bytes: OnBytes | None = None,
) -> FileStats:
    """Transform the (already decompressed) ``source`` into ``sink``.

    ``concurrency`` defaults to the effective MaxConcurrentTransforms. Where the answer is
    one line per record (``settings.counts_records``) each response must hold as many lines
    as its request held records; a mismatch raises RecordError naming the records and both
    counts. Any failure raises (RecordError for a record or request); ``sink`` may then hold
    partial output. ``on_bytes`` hears the source bytes done after each request.
    """
    started = time.perf_counter()
    counted = _CountingReader(source)
    processing = DataProcessing(settings, name)
    batches = frame(
        counted,
        name=name,
        split_type=settings.split_type,
        batch_strategy=effective.batch_strategy,
        max_payload_bytes=effective.max_payload_bytes,
        record_filter=processing.filter_record if processing.filters_input else None,
        keep_records=processing.join,
    )
    verify = settings.counts_records
    totals = {"records_in": 0, "records_out": 0, "bytes_out": 0, "requests": 0, "bytes_done": 0}

    def call(body: bytes) -> bytes:
        return _invoke_with_retries(
            invoke, body, settings.invocations_max_retries, retry_backoff_seconds
        )

    def write(batch: Batch, future: "Future[bytes]") -> None:
        try:
            response = future.result()
        except InvocationError as exc:
            reason = str(exc)
        except Exception as exc:  # an in-process handler's own error fails the request too
            reason = f"{type(exc).__name__}: {exc}"
        else:
            reason = None
        if reason is not None:
            raise RecordError(
                name, batch.first_record, f"request failed: {reason}", batch.last_record
            )
        if processing.transforms_output:
            response = processing.process_response(batch, response)
        output = assemble(response, settings.assemble_with)
        produced = output_records(output, settings.assemble_with) if verify else None
        if verify and produced != batch.record_count:
            raise RecordError(
                name,
                batch.first_record,
                f"the model returned {produced} output records for {batch.record_count} "
                "input records; each input record needs exactly one output line",
                batch.last_record,
            )
        sink.write(output)
        totals["records_in"] += batch.record_count
        totals["records_out"] += produced or 0
        totals["bytes_out"] += len(output)
        totals["requests"] += 1
        totals["bytes_done"] += batch.input_bytes
        if on_bytes is not None:
            on_bytes(totals["bytes_done"])

    width = max(1, concurrency or effective.max_concurrent_transforms)
    window: deque[tuple[Batch, Future[bytes]]] = deque()
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="invoke") as pool:
        try:
            for batch in batches:
                if len(window) >= width:
                    write(*window.popleft())
                window.append((batch, pool.submit(call, batch.body)))
            while window:
                write(*window.popleft())
        except BaseException:
            for _, future in window:
                future.cancel()
            raise
    return FileStats(
        records_in=totals["records_in"],
        records_out=totals["records_out"] if verify else None,
        bytes_in=counted.count,
        bytes_out=totals["bytes_out"],
        requests=totals["requests"],
        seconds=time.perf_counter() - started,
    )


def transform_file(
    src: Path,
    dst: Path,
    *,
    settings: TransformSettings,
    effective: EffectiveSettings,
    invoke: Invoke,
    name: str | None = None,
    concurrency: int | None = None,
    retry_backoff_seconds: float = RETRY_BACKOFF_SECONDS,
    on_bytes: OnBytes | None = None,
) -> FileStats:
    """Transform ``src`` into ``dst`` (R19): the output is written to a temporary file beside
    ``dst`` and renamed only on success, so a failed file leaves neither. Gzip input is
    decompressed first (R11); the output is uncompressed. ``name`` (default: ``src``) is how
    errors name the file. ``on_bytes`` hears the bytes of ``src`` done after each request
    (of a gzip file, estimated from how far the decompression has read into it)."""
    name = name or str(src)
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        raw = open(src, "rb")  # noqa: SIM115 - closed below, wrapped for gzip first
    except OSError as exc:
        raise InputError(f"{name}: cannot read: {exc.strerror or exc}") from None
    with raw:
        source: BinaryIO = raw
        if settings.compression_type == "Gzip":
            source = gzipped = _GzipSource(raw, name)
            on_bytes = gzipped.in_file_bytes(on_bytes)
        fd, tmp = _create_beside(dst)
        try:
            with os.fdopen(fd, "wb") as sink:
                stats = transform_stream(
                    source,
                    sink,
                    settings=settings,
                    effective=effective,
                    invoke=invoke,
                    name=name,
                    concurrency=concurrency,
                    retry_backoff_seconds=retry_backoff_seconds,
                    on_bytes=on_bytes,
                )
            os.replace(tmp, dst)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return stats


def _create_beside(dst: Path) -> tuple[int, Path]:
    """A new temporary file beside ``dst``, created with mode 0666 less the umask, as the
    output itself would be (``mkstemp`` would make it 0600 whatever the umask)."""
    while True:
        tmp = dst.with_name(f".{dst.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def _invoke_with_retries(invoke: Invoke, body: bytes, retries: int, backoff: float) -> bytes:
    """R20: up to ``retries`` more attempts for retryable failures, with doubling backoff."""
    for attempt in range(retries + 1):
        try:
            return invoke(body)
        except InvocationError as exc:
            if not exc.retryable or attempt == retries:
                if attempt:
                    raise InvocationError(
                        f"{exc.reason} (after {attempt + 1} attempts)",
                        status=exc.status,
                        retryable=exc.retryable,
                    ) from exc
                raise
            time.sleep(backoff * 2**attempt)
    raise AssertionError("unreachable")


class _CountingReader:
    """Counts the bytes read from a stream."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.count += len(data)
        return data

    def readinto(self, target: memoryview) -> int:
        got = read_into(self._raw, target)
        self.count += got
        return got


class _GzipSource:
    """A gzip stream whose corruption errors name the file (R11)."""

    def __init__(self, raw: BinaryIO, name: str):
        self._raw = raw
        self._gzip = gzip.GzipFile(fileobj=raw, mode="rb")
        self._name = name

    def in_file_bytes(self, on_bytes: OnBytes | None) -> OnBytes | None:
        """``on_bytes`` told compressed bytes instead of the decompressed ones done,
        estimated from the ratio read so far."""
        if on_bytes is None:
            return None
        report = on_bytes

        def compressed(done: int) -> None:
            produced = self._gzip.tell()
            report(self._raw.tell() * done // produced if produced else 0)

        return compressed

    def read(self, size: int = -1) -> bytes:
        try:
            return self._gzip.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{self._name}: not a valid gzip file: {exc}") from None

    def readinto(self, target: memoryview) -> int:
        try:
            return self._gzip.readinto(target)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{self._name}: not a valid gzip file: {exc}") from None
