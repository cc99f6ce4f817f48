"""ScoreShard: one shard of an endpoint round, streamed from S3 through the endpoint into
``<shard>.out`` where a transform job would write it, with the job's framing and output
rules (:func:`batchinfer.endpoints.scoring.score_stream`).

The output is one multipart upload, completed when the whole shard is scored. An
invocation near its time limit stops before the next request, finishes those in flight
and saves its progress under the attempt's folder (``runs/<run>/endpoint/<job>/progress/``):
the :class:`Position`, the upload's finished parts and the bytes not yet in a part (a
``.tail`` object). It answers ``continue`` and the next invocation goes on from there, so
no record is sent or written twice and none is lost (one that dies between two saves is
retried from the last: what it sent since is sent again, still written once). The upload's
parts are saved again before it is completed, so an invocation that dies completing it is
retried by completing it, not by scoring the shard again. A record the endpoint refuses
(4xx) is a data failure of the shard: its upload is aborted, the failure recorded under
``failures/`` (ScoringOutcome names it) and the answer is ``failed``. An endpoint still
throttled or failing after the retries of one invocation raises EndpointUnavailable, which
the Map retries.
"""

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any, BinaryIO

from botocore.exceptions import ClientError

from batchinfer.endpoints.position import START, Position
from batchinfer.endpoints.scoring import (
    REALTIME_TIMEOUT_SECONDS,
    score_stream,
    skip_input,
)
from batchinfer.endpoints.targets import EndpointTarget, invoke_endpoint
from batchinfer.errors import InputError, ValidationError
from batchinfer.pipeline.contract.run_errors import EndpointUnavailable
from batchinfer.pipeline.contract.state import RunPlan, ShardEntry
from batchinfer.pipeline.storage.s3io import read_json, run_settings, write_json
from batchinfer.sharding.listing import list_objects
from batchinfer.sharding.s3 import S3ShardWriter
from batchinfer.transform.assemble import output_name
from batchinfer.transform.csv_dialect import custom_attributes
from batchinfer.transform.file_transform import decompressed
from batchinfer.transform.record_errors import InvocationError, RecordError
from batchinfer.uris import S3Location, parse_s3_uri

CONTINUE, DONE, FAILED = "continue", "done", "failed"
# Seconds an invocation keeps back when it stops: the requests in flight may each take
# the real-time limit (C8: a real-time request holds at most 6 MB and takes at most 60 s), then the
# progress is saved.
STOP_MARGIN_SECONDS = REALTIME_TIMEOUT_SECONDS + 30


def score_shard(
    plan: RunPlan,
    shard: ShardEntry,
    job: str,
    *,
    s3: Any,
    runtime: Any,
    seconds_left: Callable[[], float],
) -> str:
    """Score ``shard`` for attempt ``job`` from its saved progress on; ``done``,
    ``continue`` (progress saved, invoke again) or ``failed`` (a data failure, recorded)."""
    if plan.endpoint is None:
        raise ValidationError(f"run {plan.run_id}: engine {plan.engine} names no endpoint")
    target = EndpointTarget.from_json(plan.endpoint, f"run {plan.run_id}: endpoint")
    folder = plan.layout.scoring(job)
    progress_at = folder.child(f"progress/{shard.name}.json")
    tail_at = folder.child(f"progress/{shard.name}.tail")
    saved = _saved(s3, progress_at)
    position = Position.from_json(saved["position"]) if saved else START
    upload_saved = saved is not None and "upload" in saved
    if position.done and not upload_saved:
        return DONE
    settings = replace(run_settings(s3, plan), compression_type=shard.compression)
    source_at = parse_s3_uri(plan.shards_prefix).child(shard.name)
    output_at = parse_s3_uri(plan.job_output).child(output_name(shard.name))
    content_type = settings.accept or "application/octet-stream"
    if position.done:  # an invocation died completing the output: complete it again
        assert saved is not None
        writer = S3ShardWriter(s3, output_at, content_type, resume=saved["upload"])
        return _complete(s3, writer, progress_at, position)
    pending = _read(s3, tail_at) if upload_saved else b""
    writer = S3ShardWriter(
        s3,
        output_at,
        content_type,
        resume=saved.get("upload") if saved else None,
        pending=pending,
    )
    if writer.size + len(pending) != position.output_bytes:
        raise InputError(
            f"{progress_at.uri}: cannot resume {source_at.uri}: the saved output holds "
            f"{writer.size + len(pending)} bytes, the position says {position.output_bytes}"
        )
    body = _open_from(s3, source_at, position.input_bytes, gzip=shard.gzip)
    try:
        source = decompressed(body, settings, source_at.uri)
        if shard.gzip:
            skip_input(source, position.input_bytes, source_at.uri)
        reached = score_stream(
            source,
            writer,
            send=invoke_endpoint(runtime, target, custom_attributes(settings.job_environment)),
            settings=settings,
            name=source_at.uri,
            position=position,
            should_stop=lambda: seconds_left() < STOP_MARGIN_SECONDS,
        )
    except RecordError as exc:
        cause = exc.__cause__
        if isinstance(cause, InvocationError) and cause.retryable:
            if saved is None:
                _abort(writer)
            raise EndpointUnavailable(
                f"{exc}; the shard goes on from its last saved position when retried"
            ) from None
        if cause is not None and not isinstance(cause, InvocationError):
            raise cause from None  # a fault of the call itself (access, validation)
        _abort(writer)
        write_json(
            s3,
            plan.layout.scoring_failures(job).child(f"{shard.name}.json"),
            {"shard": shard.name, "error": str(exc)},
        )
        return FAILED
    finally:
        body.close()
    if reached.done:
        writer.finish()
        # Saved before completing: an invocation that dies after CompleteMultipartUpload
        # leaves a retry the upload to complete again, not a shard to score again.
        write_json(s3, progress_at, {"position": reached.to_json(), "upload": writer.saved()})
        return _complete(s3, writer, progress_at, reached)
    s3.put_object(Bucket=tail_at.bucket, Key=tail_at.key, Body=writer.pending)
    write_json(s3, progress_at, {"position": reached.to_json(), "upload": writer.saved()})
    return CONTINUE


def _complete(s3: Any, writer: S3ShardWriter, progress_at: S3Location, done: Position) -> str:
    """Complete the shard's output and save the shard done. Completing an upload again is
    safe: S3 answers it as before while the object it made is still there (an invocation
    that died after completing it is retried here); NoSuchUpload means it was aborted or
    its object replaced, and the shard's output is not to be trusted."""
    try:
        writer.complete()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "NoSuchUpload":
            raise
        raise InputError(
            f"{writer.location.uri}: the shard was scored but its upload is gone (aborted, or "
            "its object replaced since): run it again"
        ) from None
    write_json(s3, progress_at, {"position": done.to_json()})
    return DONE


def _saved(s3: Any, at: S3Location) -> dict[str, Any] | None:
    """The progress saved at ``at``, or None before the first stop (listed first: without
    it a missing key reads as access denied)."""
    if not any(obj["Key"] == at.key for obj in list_objects(s3, at)):
        return None
    saved = read_json(s3, at)
    if not isinstance(saved, dict) or "position" not in saved:
        raise InputError(f"{at.uri}: not a saved scoring progress (no position)")
    return saved


def _read(s3: Any, at: S3Location) -> bytes:
    try:
        return s3.get_object(Bucket=at.bucket, Key=at.key)["Body"].read()
    except ClientError as exc:
        raise InputError(f"{at.uri}: cannot read the saved output tail: {exc}") from None


def _open_from(s3: Any, at: S3Location, offset: int, *, gzip: bool) -> BinaryIO:
    """The shard's bytes from ``offset`` (plain: a ranged GET; gzip: from the start, the
    caller skips the decompressed bytes)."""
    ranged = {"Range": f"bytes={offset}-"} if offset and not gzip else {}
    try:
        return s3.get_object(Bucket=at.bucket, Key=at.key, **ranged)["Body"]
    except ClientError as exc:
        raise InputError(f"{at.uri}: cannot read the shard: {exc}") from None


def _abort(writer: S3ShardWriter) -> None:
    with contextlib.suppress(ClientError):
        writer.abort()
