"""Small S3 helpers for the pipeline Lambdas: JSON objects, JSON Lines and JSON arrays
written and read in bounded memory, listing, streaming counts of lines, and Parquet rows
from footers."""

import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from tempfile import SpooledTemporaryFile
from typing import Any, Literal

from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from batchinfer.errors import InputError
from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.sharding.s3 import source_errors
from batchinfer.transform.parquet_footer import (
    ParquetError,
    ParquetFooter,
    footer_at_end,
    rows_at_end,
)
from batchinfer.transform.settings import TransformSettings
from batchinfer.uris import S3Location, parse_s3_uri

CHUNK = 8 * 1024 * 1024
# What a spooled object keeps in memory before it moves to a file in /tmp.
SPOOL_MEMORY = 8 * 1024 * 1024
# Spooled objects go up one 8 MiB part at a time: threads would each hold a part in memory.
SPOOL_UPLOAD = TransferConfig(use_threads=False)


def read_json(s3: Any, location: S3Location) -> Any:
    """The JSON value of an object; InputError naming its URI when unreadable or not JSON."""
    try:
        body = s3.get_object(Bucket=location.bucket, Key=location.key)["Body"].read()
    except ClientError as exc:
        raise InputError(f"{location.uri}: cannot read: {exc}") from None
    try:
        return json.loads(body)
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for non-UTF bytes
        raise InputError(f"{location.uri}: not valid JSON: {exc}") from None


def write_json(s3: Any, location: S3Location, value: Any) -> str:
    s3.put_object(
        Bucket=location.bucket,
        Key=location.key,
        Body=json.dumps(value, indent=1).encode(),
        ContentType="application/json",
    )
    return location.uri


class SpooledJson:
    """JSON values written one at a time and uploaded as one object, as JSON Lines (one value
    a line) or as a JSON array; at most :data:`SPOOL_MEMORY` bytes stay in memory, the rest
    waits in a temporary file. The upload replaces the whole object, so writing it again
    after a retry leaves the same object."""

    def __init__(self, form: Literal["lines", "array"]) -> None:
        self.form = form
        self.count = 0
        self._file = SpooledTemporaryFile(max_size=SPOOL_MEMORY)  # noqa: SIM115 (closed below)

    def add(self, value: Any) -> None:
        text = json.dumps(value)
        if self.form == "lines":
            self._file.write(f"{text}\n".encode())
        else:
            self._file.write(f"{',' if self.count else '['}\n{text}".encode())
        self.count += 1

    def upload(self, s3: Any, location: S3Location) -> str:
        """Write the values to ``location`` (a multipart upload when large); its URI."""
        if self.form == "array":
            self._file.write(b"\n]\n" if self.count else b"[]\n")
        self._file.seek(0)
        content_type = "application/jsonlines" if self.form == "lines" else "application/json"
        s3.upload_fileobj(
            self._file,
            location.bucket,
            location.key,
            ExtraArgs={"ContentType": content_type},
            Config=SPOOL_UPLOAD,
        )
        return location.uri

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "SpooledJson":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_json_lines(s3: Any, location: S3Location, *, chunk: int = CHUNK) -> Iterator[Any]:
    """The values of a JSON Lines object, streamed ``chunk`` bytes a read; InputError naming
    its URI and the line when unreadable or not JSON."""
    try:
        body = s3.get_object(Bucket=location.bucket, Key=location.key)["Body"]
    except ClientError as exc:
        raise InputError(f"{location.uri}: cannot read: {exc}") from None
    for number, line in enumerate(body.iter_lines(chunk_size=chunk), start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except ValueError as exc:
            raise InputError(f"{location.uri}: line {number} is not valid JSON: {exc}") from None


def run_settings(s3: Any, plan: RunPlan) -> TransformSettings:
    """The run's settings with the container environment Plan kept in S3."""
    if plan.environment_uri is None:
        return plan.settings
    environment = read_json(s3, parse_s3_uri(plan.environment_uri))
    return replace(plan.settings, environment=environment)


def object_size(s3: Any, uri: str) -> int | None:
    """The size of the object at ``uri``, or None when there is none."""
    location = parse_s3_uri(uri)
    try:
        return s3.head_object(Bucket=location.bucket, Key=location.key)["ContentLength"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return None
        raise


def count_rows(s3: Any, uri: str) -> int:
    """The rows of a Parquet object, from its footer: ranged reads of its end, no download.
    InputError naming ``uri`` when it is not a whole Parquet file."""
    size = object_size(s3, uri)
    if size is None:
        raise InputError(f"{uri}: no such object")
    return parquet_footer(s3, parse_s3_uri(uri), size).rows


def parquet_footer(
    s3: Any, location: S3Location, size: int, etag: str | None = None
) -> ParquetFooter:
    """The footer of the ``size``-byte Parquet object at ``location`` (the version ``etag``
    when given) from ranged reads of its end; InputError naming it when it is not a whole
    Parquet file."""
    try:
        return footer_at_end(_range_reader(s3, location, etag), size)
    except ParquetError as exc:
        raise InputError(f"{location.uri}: {exc}") from None


def parquet_rows(s3: Any, location: S3Location, size: int, etag: str | None = None) -> int:
    """The rows of the ``size``-byte Parquet object at ``location`` (the version ``etag``
    when given), from ranged reads of the head of its footer; InputError naming it when it
    is not a whole Parquet file, as far as its end shows."""
    try:
        return rows_at_end(_range_reader(s3, location, etag), size)
    except ParquetError as exc:
        raise InputError(f"{location.uri}: {exc}") from None


def _range_reader(s3: Any, location: S3Location, etag: str | None) -> Callable[[int, int], bytes]:
    """``read_range(start, end)`` of the object at ``location``, pinned to ``etag`` if any."""
    pinned = {} if etag is None else {"IfMatch": etag}

    def read_range(start: int, end: int) -> bytes:
        with source_errors(location.uri, etag, doing="read", again="start the run again"):
            answer = s3.get_object(
                Bucket=location.bucket, Key=location.key, Range=f"bytes={start}-{end - 1}", **pinned
            )
            return bytes(answer["Body"].read())

    return read_range


def count_lines(s3: Any, uri: str, *, gzip: bool = False) -> int:
    """Line records of an object (spec R6: a last line without ``\\n`` counts), streamed;
    gzip objects are counted decompressed. A corrupt or truncated gzip object is an
    InputError naming ``uri``."""
    location = parse_s3_uri(uri)
    body = s3.get_object(Bucket=location.bucket, Key=location.key)["Body"]
    inflate = zlib.decompressobj(wbits=47) if gzip else None
    count, last, compressed = 0, b"\n", 0
    for chunk in iter(lambda: body.read(CHUNK), b""):
        compressed += len(chunk)
        try:
            data = chunk if inflate is None else inflate.decompress(chunk)
            while inflate is not None and inflate.eof and inflate.unused_data:
                rest = inflate.unused_data  # concatenated gzip members
                inflate = zlib.decompressobj(wbits=47)
                data += inflate.decompress(rest)
        except zlib.error as exc:
            raise InputError(f"{uri}: not valid gzip data: {exc}") from None
        if data:
            count += data.count(b"\n")
            last = data[-1:]
    if inflate is not None and compressed and not inflate.eof:
        raise InputError(f"{uri}: gzip data ends before the end of its stream (truncated)")
    return count + (0 if last == b"\n" else 1)
