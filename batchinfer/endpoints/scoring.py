"""One file scored through a real-time endpoint, writing what a transform job would write.

The file is cut into requests by the job's rules (SplitType, BatchStrategy, MaxPayloadInMB,
InputFilter: :class:`~batchinfer.transform.file_transform.FileScoring`), each request goes
through ``send`` (HTTP to a local server, or sagemaker-runtime InvokeEndpoint), and the
answers are joined, filtered and assembled in input order exactly as the transform engine
does it. Throttling (429), 5xx and lost connections are retried with exponential backoff and
full jitter, within a bounded number of attempts; any other answer fails the file, naming
its records, the status and the start of the body (R19: a file with any failed record gets no
output). C8: a real-time request holds at most 6 MB and may take at most 60 s.

Scoring can stop before the next request and continue later from the returned
:class:`~batchinfer.endpoints.position.Position`, sending no record twice.
Standard library only, so that a Lambda function can score one shard with it.
"""

import os
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import BinaryIO

from batchinfer.endpoints.position import START, Position
from batchinfer.errors import InputError, ValidationError
from batchinfer.transform.bad_records import answer_apart, errors_name, lines_of
from batchinfer.transform.file_transform import (
    FileScoring,
    InOrder,
    OnBytes,
    Writable,
    decompressed,
    in_file_bytes,
    open_input,
)
from batchinfer.transform.record_errors import InvocationError, checked_response
from batchinfer.transform.retry import RetryPolicy
from batchinfer.transform.settings import EffectiveSettings, TransformSettings, label

# Sends one request: (body, Content-Type, Accept) -> (HTTP status, response body). It may
# raise InvocationError itself (retryable for a lost connection or a timeout). Called from
# up to MaxConcurrentTransforms threads at once, so it must be thread-safe.
Send = Callable[[bytes, str | None, str | None], tuple[int, bytes]]

REALTIME_MAX_PAYLOAD_MB = 6  # C8
REALTIME_TIMEOUT_SECONDS = 60  # C8
RETRY_BASE_SECONDS = 0.1
RETRY_CAP_SECONDS = 20.0
_SKIP_CHUNK = 1024 * 1024


def _never() -> bool:
    return False


def endpoint_settings(settings: TransformSettings) -> EffectiveSettings:
    """The batch settings an endpoint job runs with: the job's, else the defaults (an
    endpoint has no /execution-parameters to ask, R10: the job's batch settings, else the
    container's, else defaults), refused when a request could be over what a real-time endpoint
    accepts (C8)."""
    effective = settings.resolve(None)
    mb = effective.max_payload_mb
    if not 0 < mb <= REALTIME_MAX_PAYLOAD_MB:
        shown = "0 (no limit)" if mb == 0 else str(mb)
        raise ValidationError(
            f"{label('max_payload_mb')}: {shown} is not allowed with the endpoint engine; a "
            f"real-time endpoint takes requests of at most {REALTIME_MAX_PAYLOAD_MB} MB: "
            f"use 1..{REALTIME_MAX_PAYLOAD_MB}"
        )
    return effective


def endpoint_retry(settings: TransformSettings) -> RetryPolicy:
    """InvocationsMaxRetries more attempts after the first, with full jitter (R20: ModelClientConfig
    bounds timeouts and retries)."""
    return RetryPolicy(
        attempts=settings.invocations_max_retries + 1,
        base_seconds=RETRY_BASE_SECONDS,
        cap_seconds=RETRY_CAP_SECONDS,
        jitter=True,
    )


def score_stream(
    source: BinaryIO,
    sink: Writable,
    *,
    send: Send,
    settings: TransformSettings,
    name: str,
    position: Position = START,
    should_stop: Callable[[], bool] = _never,
    retry: RetryPolicy | None = None,
    concurrency: int | None = None,
    on_bytes: OnBytes | None = None,
    skip_blank_lines: bool = False,
    errors: Writable | None = None,
) -> Position:
    """Score ``source`` (the decompressed input, read from ``position.input_bytes`` on) into
    ``sink`` (the output after its first ``position.output_bytes`` bytes) and return the new
    position: ``done`` once the whole input is scored. With quarantine on (``bad_records``),
    a request the endpoint refuses (4xx) is told apart
    (:func:`~batchinfer.transform.bad_records.answer_apart`) and the records it refuses go
    to ``errors`` (the errors file after its first ``position.errors_bytes`` bytes); without
    ``errors`` their marker lines stay in the output, as in a transform job's, for the
    pipeline's count to take out.

    ``should_stop`` is asked before each request; once it says yes no more are sent, the
    requests in flight are finished and written, and the position after them is returned
    (allow for up to ``concurrency`` requests of up to 60 s each after it says so). Up to
    ``concurrency`` (default: MaxConcurrentTransforms, else 1) requests are in flight; retries
    follow ``retry`` (default :func:`endpoint_retry`). A record the endpoint refuses raises
    RecordError naming ``name``, the records, the status and the body; ``sink`` may then
    hold partial output, which must not be presented as the file's. ``on_bytes`` hears
    ``position.input_bytes`` after each request is written. ``skip_blank_lines`` drops empty
    lines (:class:`~batchinfer.transform.file_transform.FileScoring`).
    """
    if position.done:
        return position
    effective = endpoint_settings(settings)
    allowance = settings.bad_record_allowance
    scoring = FileScoring(
        settings,
        effective,
        name,
        skip_blank_lines=skip_blank_lines,
        answered=position.records_out,
        quarantined=position.records_quarantined,
        takes_out_set_aside=errors is not None,
        server_not_ours=True,
    )
    policy = retry or endpoint_retry(settings)
    content_type, accept = settings.content_type, settings.accept

    def invoke(body: bytes) -> bytes:
        return checked_response(*send(body, content_type, accept), retry_throttling=True)

    def call(body: bytes) -> bytes:
        try:
            return policy.call(invoke, body)
        except InvocationError as refusal:
            if allowance is None or _refused_records(refusal) is None:
                raise
            return answer_apart(
                lambda part: policy.call(invoke, part),
                lines_of(body),
                refusal,
                most_refused=allowance,
                reason_of=_refused_records,
                refused_whole=partial(_refused_whole, refusal),
            )

    width = concurrency or effective.max_concurrent_transforms
    reached = position
    with InOrder(
        call, width=width, failed=scoring.request_failed, should_stop=should_stop
    ) as window:
        batches = scoring.batches(source, first_record=position.records_in + 1)
        for batch, response in window.responses(batches):
            answer = scoring.output(batch, response)
            sink.write(answer.output)
            if answer.errors and errors is not None:
                errors.write(answer.errors)
            reached = reached.after(batch, answer)
            if on_bytes is not None:
                on_bytes(reached.input_bytes)
    return reached if window.stopped else replace(reached, done=True)


def _refused_records(exc: Exception) -> str | None:
    """Why the endpoint refused a request for its records (a 400, as the model server
    refuses a record it cannot read), or None: throttling, another 4xx (what the request
    asks for), a 5xx or a lost connection is no record's to be set aside."""
    if isinstance(exc, InvocationError) and exc.status == 400 and not exc.retryable:
        return exc.reason
    return None


def _refused_whole(refusal: InvocationError, why: str) -> InvocationError:
    return InvocationError(f"{refusal.reason}; {why}", status=refusal.status)


def partial_output(dst: Path) -> Path:
    """Where the output of ``dst`` grows until its file is wholly scored."""
    return dst.with_name(dst.name + ".partial")


def score_file(
    src: Path,
    dst: Path,
    *,
    byte_range: tuple[int, int | None] = (0, None),
    send: Send,
    settings: TransformSettings,
    name: str | None = None,
    position: Position = START,
    should_stop: Callable[[], bool] = _never,
    retry: RetryPolicy | None = None,
    concurrency: int | None = None,
    on_bytes: OnBytes | None = None,
    skip_blank_lines: bool = False,
) -> Position:
    """Score the file ``src`` into ``dst`` with :func:`score_stream`, from ``position``.

    The output grows in :func:`partial_output` of ``dst`` across stops and becomes ``dst``
    only when the whole file is scored; a failure removes it, so a failed file leaves no
    output (R19). Gzip input is decompressed (R11: Gzip input is decompressed and its output written
    plain). ``byte_range`` limits the input to those bytes of ``src``, as :func:`transform_file`
    does. ``name`` (default: ``src``) is how errors name the file. ``on_bytes`` hears the bytes of
    ``src`` done after each request (of a gzip file, estimated from how far the decompression has
    read into it). Records set aside (``bad_records`` quarantine) grow the same way into
    ``errors_name(dst)``, which is written only when there are any.
    """
    name = name or str(src)
    if position.done:
        return position
    partial = partial_output(dst)
    errors_at = dst.with_name(errors_name(dst.name))
    partial_errors = partial_output(errors_at)
    quarantine = settings.bad_record_allowance is not None
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open_input(src, name, *byte_range) as raw:
        source = decompressed(raw, settings, name)
        skip_input(source, position.input_bytes, name)
        with (
            _open_partial(partial, position.output_bytes) as sink,
            _open_partial(partial_errors, position.errors_bytes)
            if quarantine
            else _NO_FILE as errors,
        ):
            try:
                reached = score_stream(
                    source,
                    sink,
                    send=send,
                    settings=settings,
                    name=name,
                    position=position,
                    should_stop=should_stop,
                    retry=retry,
                    concurrency=concurrency,
                    on_bytes=in_file_bytes(source, on_bytes),
                    skip_blank_lines=skip_blank_lines,
                    errors=errors,
                )
            except BaseException:
                partial.unlink(missing_ok=True)
                partial_errors.unlink(missing_ok=True)
                raise
    if reached.done:
        os.replace(partial, dst)
        if reached.records_quarantined:
            os.replace(partial_errors, errors_at)
        else:
            partial_errors.unlink(missing_ok=True)
    return reached


def skip_input(source: BinaryIO, offset: int, name: str) -> None:
    """Move ``source`` to ``offset``: a seek where it can, else read through (gzip, a
    stream); InputError naming ``name`` when it is shorter."""
    if not offset:
        return
    if getattr(source, "seekable", lambda: False)():
        size = os.fstat(source.fileno()).st_size
        if size >= offset:
            source.seek(offset)
            return
        skipped = size
    else:
        skipped = 0
        while skipped < offset:
            got = len(source.read(min(_SKIP_CHUNK, offset - skipped)))
            if not got:
                break
            skipped += got
        if skipped == offset:
            return
    raise InputError(
        f"{name}: cannot resume at byte {offset}: the input holds only {skipped} bytes; "
        "it changed since the position was saved"
    )


_NO_FILE = nullcontext(None)


def _open_partial(partial: Path, keep: int) -> BinaryIO:
    """The partial output, holding exactly its first ``keep`` bytes, open for appending."""
    if not keep:
        return partial.open("wb")
    try:
        sink = partial.open("r+b")
    except FileNotFoundError:
        raise InputError(
            f"{partial}: cannot resume: the output written so far ({keep} bytes) is missing"
        ) from None
    size = os.fstat(sink.fileno()).st_size
    if size < keep:
        sink.close()
        raise InputError(
            f"{partial}: cannot resume: it holds {size} bytes, the position says {keep}"
        )
    sink.truncate(keep)  # bytes past the position were never recorded as scored
    sink.seek(keep)
    return sink
