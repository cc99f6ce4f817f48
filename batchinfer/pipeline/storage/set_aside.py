"""A shard output's records set aside (``bad_records`` quarantine), taken out in S3.

A transform job's output (and an endpoint shard's, and a processing job's) holds the model
server's answers as they came: a marker line in the place of each record it refused
(:mod:`batchinfer.transform.bad_records`). CountShard takes them out: the errors file
``<output>.errors.jsonl`` is written first, then the output without the marker lines
replaces the output, saying in its metadata how many it set aside (one multipart upload
each, the second begun once the first is complete). Run again after either, it finds the
same: markers still in the output are taken out again into the same bytes; an output
without markers says itself how many were set aside, so an errors file another run left
beside it is never counted.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError

from batchinfer.errors import InputError
from batchinfer.pipeline.storage.s3io import CHUNK
from batchinfer.sharding.s3 import S3ShardWriter
from batchinfer.transform.bad_records import MARKER, BadRecords, has_marks, lines_of
from batchinfer.uris import S3Location

ERRORS_CONTENT_TYPE = "application/jsonlines"
# The user metadata of an output whose records set aside were taken out: how many.
SET_ASIDE_METADATA = "batchinfer-records-set-aside"
# Reads of an output rewritten meanwhile before its step gives up.
ATTEMPTS = 3


def take_out_set_aside(
    s3: Any,
    output: S3Location,
    errors: S3Location,
    *,
    name: str,
    allowance: int,
    content_type: str,
) -> tuple[int, int]:
    """``(records answered, records set aside)`` of the Line output at ``output``, whose
    marker lines (if any) go to ``errors``, numbered as records of ``name``; InputError
    naming ``name`` past ``allowance`` (:class:`BadRecords`). Every read is pinned to the
    output as first read: one rewritten meanwhile (by this step run twice at once) is read
    again from the start."""
    for _ in range(ATTEMPTS):
        try:
            return _take_out(s3, output, errors, name, allowance, content_type)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("PreconditionFailed", "412"):
                raise
    raise InputError(
        f"{output.uri}: rewritten {ATTEMPTS} times while its records set aside were taken out"
    )


def _take_out(
    s3: Any, output: S3Location, errors: S3Location, name: str, allowance: int, content_type: str
) -> tuple[int, int]:
    lines, marked, etag = _scan(s3, output)
    if not marked:
        head = s3.head_object(Bucket=output.bucket, Key=output.key, IfMatch=etag)
        return lines, int(head.get("Metadata", {}).get(SET_ASIDE_METADATA, 0))
    bad = BadRecords(name, allowance)
    answered, first = 0, 1
    with upload(s3, errors, ERRORS_CONTENT_TYPE) as errors_file:
        for chunk in whole_lines(s3, output, etag):
            records = chunk.count(b"\n")
            taken = bad.take(chunk, first, records)
            errors_file.write(taken.errors)
            answered, first = answered + taken.answered, first + records
    # Only once the errors file is whole: until then the output keeps its markers.
    metadata = {SET_ASIDE_METADATA: str(bad.count)}
    with upload(s3, output, content_type, metadata) as kept:
        for chunk in whole_lines(s3, output, etag):
            kept.write(b"".join(line for line in lines_of(chunk) if not line.startswith(MARKER)))
    return answered, bad.count


@contextmanager
def upload(
    s3: Any, location: S3Location, content_type: str, metadata: dict[str, str] | None = None
) -> Iterator[S3ShardWriter]:
    """A multipart upload to ``location``, completed when the block ends without an error,
    else aborted."""
    writer = S3ShardWriter(s3, location, content_type, metadata=metadata)
    try:
        yield writer
        writer.finish()
    except BaseException:
        writer.abort()
        raise
    writer.complete()


def whole_lines(s3: Any, location: S3Location, etag: str | None = None) -> Iterator[bytes]:
    """The object (its version ``etag``, when given) in chunks of whole lines (a last line
    without ``\\n`` is given one)."""
    rest = b""
    for chunk in _chunks(s3, location, etag)[1]:
        data = rest + chunk
        end = data.rfind(b"\n") + 1
        if end:
            yield data[:end]
        rest = data[end:]
    if rest:
        yield rest + b"\n"


def _scan(s3: Any, location: S3Location) -> tuple[int, bool, str]:
    """The Line records of an object (a last line without ``\\n`` counts), whether one of
    them is a marker line, and the ETag of what was read."""
    count, last, marked = 0, b"\n", False
    etag, chunks = _chunks(s3, location)
    for chunk in chunks:
        marked = marked or has_marks(chunk, after_line_end=last == b"\n")
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1), marked, etag


def _chunks(s3: Any, location: S3Location, etag: str | None = None) -> tuple[str, Iterator[bytes]]:
    """The ETag of the object read (``etag``, which it must have, when given) and its
    bytes, a chunk at a time."""
    pinned = {} if etag is None else {"IfMatch": etag}
    got = s3.get_object(Bucket=location.bucket, Key=location.key, **pinned)
    body = got["Body"]
    return got["ETag"], iter(lambda: body.read(CHUNK), b"")
