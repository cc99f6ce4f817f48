"""One file through a transform job: frame, filter, invoke, join, assemble (R5-R19: the rules of one
file's transform).

``invoke`` sends one request body and returns the response body: an HTTP client for the
local engine, an in-process handler for processing mode. It enforces the invocation timeout
itself and raises InvocationError; this module retries the retryable ones (5xx, timeouts,
lost connections) up to InvocationsMaxRetries times (R20: ModelClientConfig bounds timeouts and
retries) and never retries the others (4xx). Up to ``concurrency`` requests are in flight (R9: each
instance keeps MaxConcurrentTransforms requests in flight); outputs are written in input order (R14:
output records keep the order of the input) whatever order the responses arrive in. The rules of one
file (:class:`FileScoring`) and the in-order window (:class:`InOrder`) are what every engine shares,
the endpoint engine included.
"""

import gzip
import io
import os
import secrets
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Protocol, cast

from batchinfer.errors import InputError
from batchinfer.transform.assemble import assemble, output_records
from batchinfer.transform.bad_records import BadRecords, errors_name, has_marks
from batchinfer.transform.dataprocessing import DataProcessing
from batchinfer.transform.parquet_files import largest_row_group, request_bytes_alone
from batchinfer.transform.parquet_footer import ParquetError, ParquetFooter, footer_of
from batchinfer.transform.record_errors import InvocationError, RecordError, record_range
from batchinfer.transform.records import Batch, Readable, empty_line, frame, read_into
from batchinfer.transform.retry import Invoke, RetryPolicy
from batchinfer.transform.settings import EffectiveSettings, TransformSettings, label

# Told, after each request's output is written, how many bytes of the file are done so far.
OnBytes = Callable[[int], None]

RETRY_BACKOFF_SECONDS = 0.1


class Writable(Protocol):
    """Where a transform writes its output: a binary file, or anything with its ``write``
    (an S3 multipart writer)."""

    def write(self, data: bytes, /) -> object: ...


@dataclass(frozen=True)
class FileStats:
    """What one file's transform did. ``bytes_in`` counts decompressed input bytes;
    ``records_out`` is None where output records cannot be counted (R17: a CSV join adds the
    prediction to its row, one line per record; see ``TransformSettings.records_not_counted``)."""

    records_in: int
    records_out: int | None
    bytes_in: int
    bytes_out: int
    requests: int
    seconds: float
    # Records the model refused that were set aside (``bad_records`` quarantine), in the
    # errors file beside the output, not in records_out.
    records_quarantined: int = 0


@dataclass(frozen=True)
class Answer:
    """What one request's answer gives the output: its bytes and how many records they
    hold (None where output records cannot be counted), and the errors-file lines of the
    records set aside (``bad_records`` quarantine)."""

    output: bytes
    records: int | None
    errors: bytes = b""
    quarantined: int = 0


class FileScoring:
    """The job's rules for one file, whoever answers its requests: framing into request
    bodies (R5-R8: how a file becomes records and request bodies; the InputFilter of R16: the
    filters take a small subset of JSONPath) and each response's output bytes (join and
    OutputFilter, R17, R18: a JSON join puts the prediction under SageMakerOutput; assembly,
    R13: AssembleWith decides what goes between responses; one output line per input record).
    ``skip_blank_lines`` drops empty lines before batching (batchinfer's own option);
    ``answered`` and ``quarantined`` are the records of the file answered and set aside
    before (a scoring that goes on from where it stopped); ``takes_out_set_aside`` False
    leaves the marker lines of records set aside in the output, as a transform job's output
    holds them, for the pipeline's count to take out. ``server_not_ours``: the answers come
    from a server the job does not start (an endpoint), whose own environment may ask it
    to set records aside; without quarantine, an answer with marker lines then fails the
    file."""

    def __init__(
        self,
        settings: TransformSettings,
        effective: EffectiveSettings,
        name: str,
        *,
        skip_blank_lines: bool = False,
        answered: int = 0,
        quarantined: int = 0,
        takes_out_set_aside: bool = True,
        server_not_ours: bool = False,
    ):
        self.settings, self.effective, self.name = settings, effective, name
        self.skip_blank_lines = skip_blank_lines
        self._processing = DataProcessing(settings, name)
        allowance = settings.bad_record_allowance
        # Marker lines no one asked for, in an answer of lines: the server's own
        # BATCHINFER_MAX_BAD_RECORDS (a server the engines start is never given it then).
        self._marks_unasked = (
            server_not_ours
            and allowance is None
            and settings.counts_records
            and not settings.answers_parquet  # lines only: a binary answer may hold any byte
        )
        self._bad = None
        if allowance is not None and takes_out_set_aside:
            self._bad = BadRecords(name, allowance, answered=answered, count=quarantined)

    def batches(self, source: Readable, first_record: int = 1) -> Iterator[Batch]:
        """The request bodies of ``source``, whose first record is ``first_record``."""
        if self.settings.parquet_in:
            return self._parquet_file(source)
        processing = self._processing
        return frame(
            source,
            name=self.name,
            split_type=self.settings.split_type,
            batch_strategy=self.effective.batch_strategy,
            max_payload_bytes=self.effective.max_payload_bytes,
            record_filter=processing.filter_record if processing.filters_input else None,
            keep_records=processing.join,
            first_record=first_record,
            skip_blank_lines=self.skip_blank_lines,
        )

    def _parquet_file(self, source: Readable) -> Iterator[Batch]:
        """A Parquet file as one request, its records its rows (by its footer); InputError
        naming the file when it is not a whole Parquet file, RecordError when it is over
        MaxPayloadInMB (R8: a record larger than MaxPayloadInMB fails its file)."""
        data = source.read()
        try:
            footer = footer_of(data)
        except ParquetError as exc:
            raise InputError(
                f"{self.name}: {exc}, but {label('content_type')} is {self.settings.content_type!r}"
            ) from None
        limit = self.effective.max_payload_bytes
        if limit is not None and len(data) > limit:
            raise self._parquet_too_large(footer, len(data), limit)
        yield Batch(data, 1, footer.rows, input_bytes=len(data))

    def _parquet_too_large(self, footer: ParquetFooter, size: int, limit: int) -> RecordError:
        """R8: the file fails; the message names the largest row group when even it does not
        fit (a row group cannot be cut), else the shards that would."""
        bound = f"MaxPayloadInMB={self.effective.max_payload_mb} ({limit} bytes)"
        index, first = largest_row_group(footer)
        group = footer.row_groups[index] if footer.row_groups else None
        if group is not None and request_bytes_alone(footer, index) > limit:
            return RecordError(
                self.name,
                first,
                f"are row group {index} of this Parquet file, {group.size} bytes, over "
                f"{bound}; a request holds whole row groups: write the file with smaller row "
                "groups (pyarrow's row_group_size) or raise max_payload_mb (up to 100, or 0 "
                "for no limit)",
                first + group.rows - 1,
            )
        return RecordError(
            self.name,
            1,
            f"are a Parquet file of {size} bytes in {len(footer.row_groups)} row groups, over "
            f"{bound}, and a Parquet file is sent whole: split it into shards of row groups "
            "(--shards auto keeps each within the limit) or raise max_payload_mb (up to 100, "
            "or 0 for no limit)",
            max(footer.rows, 1),
        )

    def request_failed(self, batch: Batch, reason: str) -> RecordError:
        """How the file fails when the request of ``batch`` failed for ``reason`` (R19: a file
        with any failed record gets no output): naming its records, or the first of them that
        is an empty line, the likely cause, and what to do about it."""
        empty = empty_line(batch) if self.settings.split_type == "Line" else None
        if empty is None:
            return RecordError(
                self.name, batch.first_record, f"request failed: {reason}", batch.last_record
            )
        return RecordError(
            self.name,
            empty,
            "is an empty line, and with split_type (SplitType) Line every line is a record: "
            "remove empty lines from the input, or skip them with --skip-blank-lines "
            f"(batchinfer run); the request of "
            f"{record_range(batch.first_record, batch.last_record)} failed: {reason}",
        )

    def output(self, batch: Batch, response: bytes) -> Answer:
        """What the ``response`` to ``batch`` gives the output. Where output records can be
        counted (``settings.counts_records``) it must hold as many lines as its request held
        records; else RecordError names the records. With quarantine on, the lines that
        stand for records the model refused are taken out into errors-file lines
        (:class:`~batchinfer.transform.bad_records.BadRecords`)."""
        if self._processing.transforms_output:
            response = self._processing.process_response(batch, response)
        assemble_with = self.settings.assemble_with
        output = assemble(response, assemble_with)
        verify = self.settings.counts_records
        if not verify:
            produced = None
        elif self.settings.answers_parquet:
            try:
                produced = footer_of(output).rows
            except ParquetError as exc:
                reason = f"the model's answer {exc} (Accept {self.settings.accept!r})"
                first, last = batch.first_record, batch.last_record
                raise RecordError(self.name, first, reason, last) from None
        else:
            produced = output_records(output, assemble_with)
        if verify and produced != batch.record_count:
            unit = "row" if self.settings.answers_parquet else "line"
            raise RecordError(
                self.name,
                batch.first_record,
                f"the model returned {produced} output records for {batch.record_count} "
                f"input records; each input record needs exactly one output {unit}",
                batch.last_record,
            )
        if self._bad is None:
            if self._marks_unasked and has_marks(output):
                raise RecordError(
                    self.name,
                    batch.first_record,
                    "the model server set records aside (BATCHINFER_MAX_BAD_RECORDS in its "
                    f"environment), but {label('bad_records')} is 'fail': nothing takes "
                    "them out; unset the variable, or set bad_records 'quarantine'",
                    batch.last_record,
                )
            return Answer(output, produced)
        kept = self._bad.take(output, batch.first_record, batch.record_count)
        return Answer(kept.output, kept.answered, kept.errors, kept.count)


class InOrder:
    """Sends batches through ``call`` with up to ``width`` requests in flight (R9) and gives
    back each batch with its response in input order (R14), whatever order they arrive in.

    A failed request raises the RecordError that ``failed`` makes of its batch and the reason
    (R19: a file with any failed record gets no output). ``should_stop`` is asked before each
    request: once it says yes, no more are sent, those in flight are still given back and
    ``stopped`` is set. Use it as a context manager: leaving it cancels what was not sent and
    waits for what was.
    """

    def __init__(
        self,
        call: Invoke,
        *,
        width: int,
        failed: Callable[[Batch, str], RecordError],
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self._call, self._width, self._failed = call, max(1, width), failed
        self._should_stop = should_stop
        self._window: deque[tuple[Batch, Future[bytes]]] = deque()
        self._pool: ThreadPoolExecutor | None = None
        self.stopped = False

    def __enter__(self) -> "InOrder":
        self._pool = ThreadPoolExecutor(max_workers=self._width, thread_name_prefix="invoke")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for _, future in self._window:
            future.cancel()
        assert self._pool is not None
        self._pool.shutdown(wait=True)

    def responses(self, batches: Iterator[Batch]) -> Iterator[tuple[Batch, bytes]]:
        """Each of ``batches`` with its response body, in order."""
        assert self._pool is not None, "use InOrder in a with block"
        for batch in batches:
            if self._should_stop is not None and self._should_stop():
                self.stopped = True
                break
            if len(self._window) >= self._width:
                yield self._result(*self._window.popleft())
            self._window.append((batch, self._pool.submit(self._call, batch.body)))
        while self._window:
            yield self._result(*self._window.popleft())

    def _result(self, batch: Batch, future: "Future[bytes]") -> tuple[Batch, bytes]:
        cause: Exception
        try:
            return batch, future.result()
        except InvocationError as exc:
            reason, cause = str(exc), exc
        except Exception as exc:  # an in-process handler's own error fails the request too
            reason, cause = f"{type(exc).__name__}: {exc}", exc
        # The cause stays attached: a caller may tell a refused record from a busy endpoint.
        raise self._failed(batch, reason) from cause


def transform_stream(
    source: Readable,
    sink: Writable,
    *,
    settings: TransformSettings,
    effective: EffectiveSettings,
    invoke: Invoke,
    name: str,
    concurrency: int | None = None,
    retry_backoff_seconds: float = RETRY_BACKOFF_SECONDS,
    on_bytes: OnBytes | None = None,
    skip_blank_lines: bool = False,
    errors: Writable | None = None,
) -> FileStats:
    """Transform the (already decompressed) ``source`` into ``sink``, and the records set
    aside (``bad_records`` quarantine) into ``errors``; without ``errors``, their marker
    lines stay in ``sink``, as a transform job's output holds them.

    ``concurrency`` defaults to the effective MaxConcurrentTransforms. Retryable failures
    are retried up to InvocationsMaxRetries times with doubling backoff (R20). Where the
    answer is one line per record (``settings.counts_records``) each response must hold as
    many lines as its request held records; a mismatch raises RecordError naming the
    records and both counts. Any failure raises (RecordError for a record or request);
    ``sink`` may then hold partial output. ``on_bytes`` hears the source bytes done after
    each request. ``skip_blank_lines`` drops empty lines (:class:`FileScoring`).
    """
    started = time.perf_counter()
    counted = _CountingReader(source)
    scoring = FileScoring(
        settings,
        effective,
        name,
        skip_blank_lines=skip_blank_lines,
        takes_out_set_aside=errors is not None,
    )
    retry = RetryPolicy(settings.invocations_max_retries + 1, retry_backoff_seconds)
    verify = settings.counts_records
    totals = dict.fromkeys(
        ("records_in", "records_out", "bytes_out", "requests", "bytes_done", "quarantined"), 0
    )

    def call(body: bytes) -> bytes:
        return retry.call(invoke, body)

    width = concurrency or effective.max_concurrent_transforms
    with InOrder(call, width=width, failed=scoring.request_failed) as window:
        for batch, response in window.responses(scoring.batches(counted)):
            answer = scoring.output(batch, response)
            sink.write(answer.output)
            if answer.errors and errors is not None:
                errors.write(answer.errors)
            totals["records_in"] += batch.record_count
            totals["records_out"] += answer.records or 0
            totals["quarantined"] += answer.quarantined
            totals["bytes_out"] += len(answer.output)
            totals["requests"] += 1
            totals["bytes_done"] += batch.input_bytes
            if on_bytes is not None:
                on_bytes(totals["bytes_done"])
    return FileStats(
        records_in=totals["records_in"],
        records_out=totals["records_out"] if verify else None,
        bytes_in=counted.count,
        bytes_out=totals["bytes_out"],
        requests=totals["requests"],
        seconds=time.perf_counter() - started,
        records_quarantined=totals["quarantined"],
    )


def open_input(src: Path, name: str, start: int = 0, end: int | None = None) -> BinaryIO:
    """``src`` opened for reading (only its bytes ``[start, end)`` when ``end`` is given);
    InputError names ``name`` when it cannot be."""
    try:
        raw = open(src, "rb")  # noqa: SIM115 (the caller closes it)
    except OSError as exc:
        raise InputError(f"{name}: cannot read: {exc.strerror or exc}") from None
    if end is None and not start:
        return raw
    # A RawIOBase reads, closes and works as a context manager as the file does; typing's
    # BinaryIO is a nominal class it cannot be.
    return cast(BinaryIO, _ByteRange(raw, start, end, name))


def decompressed(raw: BinaryIO, settings: TransformSettings, name: str) -> BinaryIO:
    """The bytes the job frames: ``raw`` itself, or decompressed for Gzip (R11: Gzip input is
    decompressed and its output written plain)."""
    if settings.compression_type == "Gzip":
        # Read as the file would be (typing's BinaryIO is a nominal class it cannot be).
        return cast(BinaryIO, _GzipSource(raw, name))
    return raw


def in_file_bytes(source: BinaryIO, on_bytes: OnBytes | None) -> OnBytes | None:
    """``on_bytes`` told bytes of the file for bytes of ``source`` done: the same for a
    plain file; for a gzip file (:func:`decompressed`), estimated from how far the
    decompression has read into it."""
    if isinstance(source, _GzipSource):
        return source.in_file_bytes(on_bytes)
    return on_bytes


def transform_file(
    src: Path,
    dst: Path,
    *,
    byte_range: tuple[int, int | None] = (0, None),
    settings: TransformSettings,
    effective: EffectiveSettings,
    invoke: Invoke,
    name: str | None = None,
    concurrency: int | None = None,
    retry_backoff_seconds: float = RETRY_BACKOFF_SECONDS,
    on_bytes: OnBytes | None = None,
    skip_blank_lines: bool = False,
    takes_out_set_aside: bool = True,
) -> FileStats:
    """Transform ``src`` into ``dst`` (R19): the output is written to a temporary file beside
    ``dst`` and renamed only on success, so a failed file leaves neither; so are the
    records set aside (``bad_records`` quarantine), into ``errors_name(dst)``, when there
    are any. Gzip input is decompressed first (R11); the output is uncompressed.
    ``byte_range`` ``(start, end)`` limits the input to those bytes of ``src`` (a shard;
    ``end`` None: to the end).
    ``name`` (default: ``src``) is how errors name the file. ``on_bytes`` hears the bytes
    of ``src`` done after each request (of a gzip file, estimated from how far the
    decompression has read into it). ``skip_blank_lines`` drops empty lines
    (:class:`FileScoring`); ``takes_out_set_aside`` False leaves the marker lines of
    records set aside in the output, as a transform job's output holds them."""
    name = name or str(src)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open_input(src, name, *byte_range) as raw:
        source = decompressed(raw, settings, name)
        on_bytes = in_file_bytes(source, on_bytes)
        with Beside(dst) as sink, Beside(dst.with_name(errors_name(dst.name))) as errors:
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
                skip_blank_lines=skip_blank_lines,
                errors=errors if takes_out_set_aside else None,
            )
            sink.keep()
            errors.keep(stats.records_quarantined > 0)
    return stats


class Beside:
    """A file written under a temporary name beside ``path`` (created on the first write)
    that becomes ``path`` once kept and the block ends without an error; else it goes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO | None = None
        self._tmp: Path | None = None
        self._kept = False

    def write(self, data: bytes) -> None:
        if self._file is None:
            fd, self._tmp = _create_beside(self.path)
            self._file = os.fdopen(fd, "wb")
        self._file.write(data)

    def keep(self, kept: bool = True) -> None:
        """Put it in place when the block ends (an empty file too: the output of a file
        with no records)."""
        self._kept = kept
        if kept and self._file is None:
            self.write(b"")

    def __enter__(self) -> "Beside":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._file is not None:
            self._file.close()
        if self._tmp is None:
            return
        if exc_type is None and self._kept:
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)


def _create_beside(dst: Path) -> tuple[int, Path]:
    """A new temporary file beside ``dst``, created with mode 0666 less the umask, as the
    output itself would be (``mkstemp`` would make it 0600 whatever the umask)."""
    while True:
        tmp = dst.with_name(f".{dst.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


class _ByteRange(io.RawIOBase):
    """Bytes ``[start, end)`` of an open file (``end`` None: to its end), read with
    ``pread``; closing it closes the file. A file that ends before ``end`` (it was cut short
    since the range was planned) raises InputError naming ``name``: a short range would
    otherwise pass for a whole one."""

    def __init__(self, file: BinaryIO, start: int, end: int | None, name: str):
        super().__init__()
        self._file, self._start, self._position, self._name = file, start, start, name
        self._end = os.fstat(file.fileno()).st_size if end is None else end

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        """How many bytes of the range are read (a gzip range's progress is measured so)."""
        return self._position - self._start

    def readinto(self, target: Any) -> int:
        size = min(len(target), self._end - self._position)
        if size <= 0:
            return 0
        got = os.preadv(self._file.fileno(), [memoryview(target)[:size]], self._position)
        if not got:
            raise InputError(
                f"{self._name}: the file ends at byte {self._position}, before byte "
                f"{self._end}: it changed while it was read"
            )
        self._position += got
        return got

    def close(self) -> None:
        self._file.close()
        super().close()


class _CountingReader:
    """Counts the bytes read from a stream."""

    def __init__(self, raw: Readable):
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
