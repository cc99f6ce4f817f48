"""An S3 client for the scale harness: the calls the pipeline's steps make, each request's
parameters checked against botocore's S3 model and charged to the meter (costs.py).

Objects cost no memory of the process: a stored object is a list of segments, bytes in a file
under the store's folder or a repeated line of a given length (a large input nobody reads
whole), and a copy copies the segments, not the bytes."""

import hashlib
import io
import itertools
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import botocore.session
from botocore import xform_name
from botocore.exceptions import ClientError, ParamValidationError
from botocore.response import StreamingBody
from botocore.validate import ParamValidator

from tests.support.scale.costs import S3_CLIENT_CPU_SECONDS, S3_REQUEST_SECONDS, s3_seconds
from tests.support.scale.meter import Meter

_MODEL = botocore.session.get_session().get_service_model("s3")
_OPERATIONS = {xform_name(name): name for name in _MODEL.operation_names}
PAGE_KEYS = 1000
PART = 8 * 1024 * 1024  # boto3's TransferConfig: multipart_threshold and multipart_chunksize
TRANSFER_THREADS = 10  # boto3's TransferConfig: max_concurrency


@dataclass(frozen=True)
class Segment:
    """``length`` bytes: from ``path`` at ``offset``, or ``line`` repeated from ``offset``."""

    length: int
    path: Path | None = None
    line: bytes = b""
    offset: int = 0

    def cut(self, start: int, end: int) -> "Segment":
        return Segment(end - start, self.path, self.line, self.offset + start)

    def read(self) -> Iterator[bytes]:
        if self.path is not None:
            with self.path.open("rb") as file:
                file.seek(self.offset)
                left = self.length
                while left:
                    chunk = file.read(min(left, 1024 * 1024))
                    left -= len(chunk)
                    yield chunk
            return
        start = self.offset % len(self.line)
        left = self.length
        block = self.line * max(1, (1024 * 1024) // len(self.line))
        while left:
            chunk = (block[start:] + block)[: min(left, len(block))]
            start = (start + len(chunk)) % len(self.line)
            left -= len(chunk)
            yield chunk


@dataclass(frozen=True)
class Stored:
    segments: tuple[Segment, ...]
    etag: str

    @property
    def size(self) -> int:
        return sum(s.length for s in self.segments)

    def cut(self, start: int, end: int) -> tuple[Segment, ...]:
        """The segments of bytes ``start`` to ``end`` (exclusive)."""
        out, at = [], 0
        for segment in self.segments:
            lo, hi = max(start, at), min(end, at + segment.length)
            if lo < hi:
                out.append(segment.cut(lo - at, hi - at))
            at += segment.length
        return tuple(out)


class _Chain(io.RawIOBase):
    def __init__(self, segments: tuple[Segment, ...]) -> None:
        self._chunks = itertools.chain.from_iterable(s.read() for s in segments)
        self._rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._rest:
            self._rest = next(self._chunks, b"")
            if not self._rest:
                return 0
        size = min(len(buffer), len(self._rest))
        buffer[:size] = self._rest[:size]
        self._rest = self._rest[size:]
        return size


def _error(code: str, message: str, operation: str, status: int = 400) -> ClientError:
    response = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {}}
    response["ResponseMetadata"]["HTTPStatusCode"] = status
    return ClientError(response, operation)  # type: ignore[arg-type]


class FakeS3:
    """The S3 calls of the pipeline's steps, over objects kept as segments."""

    def __init__(self, folder: Path, meter: Meter, region: str = "eu-west-1") -> None:
        self.meta = SimpleNamespace(region_name=region)
        self._folder = folder
        self._meter = meter
        self._objects: dict[tuple[str, str], Stored] = {}
        self._sorted: dict[str, list[str]] = {}
        self._uploads: dict[str, dict[int, Stored]] = {}
        self._lock = threading.Lock()
        self._files = itertools.count()

    def _charge(self, operation: str, seconds: float) -> None:
        """One request: its AWS time, and the CPU boto3 would have spent on it."""
        self._meter.charge(operation, seconds, S3_CLIENT_CPU_SECONDS)

    # Seeding, outside the meter
    def seed(self, bucket: str, key: str, body: bytes) -> None:
        self._store(bucket, key, self._file_segments(body))

    def seed_copies(self, bucket: str, keys: Iterable[str], body: bytes) -> None:
        """One object of ``body`` at each of ``keys``, all read from one file."""
        segments = self._file_segments(body)
        for key in keys:
            self._store(bucket, key, segments)

    def seed_lines_of(self, bucket: str, key: str, lines: Iterable[str]) -> None:
        """An object of ``lines``, written to its file one at a time."""
        path = self._new_file()
        with path.open("w") as file:
            file.writelines(lines)
        size = path.stat().st_size
        self._store(bucket, key, (Segment(size, path),) if size else ())

    def seed_lines(self, bucket: str, key: str, size: int, line: bytes = b"1,2,3\n") -> None:
        """An object of ``size`` bytes of ``line`` repeated, held in no file."""
        self._store(bucket, key, (Segment(size, line=line),))

    def body(self, bucket: str, key: str) -> bytes:
        return b"".join(itertools.chain.from_iterable(s.read() for s in self._get(bucket, key)))

    def head_etag(self, bucket: str, key: str) -> str:
        return self._objects[(bucket, key)].etag

    def size(self, bucket: str, key: str) -> int:
        return self._objects[(bucket, key)].size

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        return [k for k in self._listing(bucket) if k.startswith(prefix)]

    # The client's calls
    def get_object(self, **params: Any) -> dict[str, Any]:
        stored = self._read("get_object", params)
        segments, start = stored.segments, 0
        if "Range" in params:
            start, end = _range(params["Range"], stored.size)
            segments = stored.cut(start, end + 1)
        length = sum(s.length for s in segments)
        self._charge("s3:GetObject", s3_seconds(length))
        raw = io.BufferedReader(_Chain(segments), 1024 * 1024)
        return {"Body": StreamingBody(raw, length), "ContentLength": length, "ETag": stored.etag}

    def head_object(self, **params: Any) -> dict[str, Any]:
        stored = self._read("head_object", params)
        self._charge("s3:HeadObject", S3_REQUEST_SECONDS)
        return {"ContentLength": stored.size, "ETag": stored.etag}

    def put_object(self, **params: Any) -> dict[str, Any]:
        self._check("put_object", params)
        body = params.get("Body", b"")
        data = body.read() if hasattr(body, "read") else bytes(body)
        self._charge("s3:PutObject", s3_seconds(len(data)))
        stored = self._store(params["Bucket"], params["Key"], self._file_segments(data))
        return {"ETag": stored.etag}

    def upload_fileobj(
        self, Fileobj: Any, Bucket: str, Key: str, ExtraArgs: Any = None, **_: Any
    ) -> None:
        """boto3's managed upload: one PutObject up to 8 MiB, else 8 MiB parts."""
        path = self._new_file()
        size = 0
        with path.open("wb") as file:
            for chunk in iter(lambda: Fileobj.read(PART), b""):
                file.write(chunk)
                size += len(chunk)
                self._charge("s3:UploadPart", s3_seconds(len(chunk)))
        self._store(Bucket, Key, (Segment(size, path),) if size else ())

    def copy_object(self, **params: Any) -> dict[str, Any]:
        self._check("copy_object", params)
        source = self._source(params, "CopyObject")
        if source.size > 5 * 1024**3:
            raise _error("InvalidRequest", "copy source larger than 5 GB", "CopyObject")
        self._charge("s3:CopyObject", s3_seconds(source.size))
        stored = self._store(params["Bucket"], params["Key"], source.segments)
        return {"CopyObjectResult": {"ETag": stored.etag}}

    def copy(self, CopySource: dict[str, str], Bucket: str, Key: str, **_: Any) -> None:
        """boto3's managed copy: UploadPartCopy of 8 MiB parts, 10 at a time."""
        source = self._get(CopySource["Bucket"], CopySource["Key"])
        parts = max(1, -(-source.size // PART))
        seconds = (parts * S3_REQUEST_SECONDS + s3_seconds(source.size)) / min(
            parts, TRANSFER_THREADS
        )
        self._charge("s3:UploadPartCopy", seconds)
        self._store(Bucket, Key, source.segments)

    def create_multipart_upload(self, **params: Any) -> dict[str, Any]:
        self._check("create_multipart_upload", params)
        self._charge("s3:CreateMultipartUpload", S3_REQUEST_SECONDS)
        upload = f"upload-{next(self._files)}"
        self._uploads[upload] = {}
        return {"UploadId": upload, "Bucket": params["Bucket"], "Key": params["Key"]}

    def upload_part(self, **params: Any) -> dict[str, Any]:
        self._check("upload_part", params)
        body = params["Body"]
        data = body.read() if hasattr(body, "read") else bytes(body)
        self._charge("s3:UploadPart", s3_seconds(len(data)))
        part = Stored(self._file_segments(data), _etag(data))
        self._uploads[params["UploadId"]][params["PartNumber"]] = part
        return {"ETag": part.etag}

    def upload_part_copy(self, **params: Any) -> dict[str, Any]:
        self._check("upload_part_copy", params)
        source = self._source(params, "UploadPartCopy")
        segments = source.segments
        if "CopySourceRange" in params:
            start, end = _range(params["CopySourceRange"], source.size)
            segments = source.cut(start, end + 1)
        length = sum(s.length for s in segments)
        self._charge("s3:UploadPartCopy", s3_seconds(length))
        part = Stored(segments, _etag(f"{source.etag}{params.get('CopySourceRange')}".encode()))
        self._uploads[params["UploadId"]][params["PartNumber"]] = part
        return {"CopyPartResult": {"ETag": part.etag}}

    def complete_multipart_upload(self, **params: Any) -> dict[str, Any]:
        self._check("complete_multipart_upload", params)
        self._charge("s3:CompleteMultipartUpload", S3_REQUEST_SECONDS)
        parts = self._uploads.pop(params["UploadId"])
        listed = [p["PartNumber"] for p in params["MultipartUpload"]["Parts"]]
        segments = tuple(s for number in listed for s in parts[number].segments)
        stored = self._store(params["Bucket"], params["Key"], segments)
        return {"ETag": stored.etag}

    def abort_multipart_upload(self, **params: Any) -> dict[str, Any]:
        self._check("abort_multipart_upload", params)
        self._charge("s3:AbortMultipartUpload", S3_REQUEST_SECONDS)
        self._uploads.pop(params["UploadId"], None)
        return {}

    def list_objects_v2(self, **params: Any) -> dict[str, Any]:
        self._check("list_objects_v2", params)
        self._charge("s3:ListObjectsV2", S3_REQUEST_SECONDS)
        listing = self._listing(params["Bucket"])
        prefix = params.get("Prefix", "")
        after = params.get("ContinuationToken") or params.get("StartAfter") or ""
        at = bisect_left(listing, prefix)
        if after:
            at = max(at, bisect_right(listing, after))
        limit = min(params.get("MaxKeys", PAGE_KEYS), PAGE_KEYS)
        contents = []
        while at < len(listing) and len(contents) < limit:
            key = listing[at]
            if not key.startswith(prefix):
                break
            stored = self._objects[(params["Bucket"], key)]
            contents.append({"Key": key, "Size": stored.size, "ETag": stored.etag})
            at += 1
        more = at < len(listing) and listing[at].startswith(prefix)
        page: dict[str, Any] = {"KeyCount": len(contents), "IsTruncated": more}
        if contents:
            page["Contents"] = contents
        if more:
            page["NextContinuationToken"] = contents[-1]["Key"]
        return page

    def get_paginator(self, name: str) -> "_Paginator":
        assert name == "list_objects_v2", name
        return _Paginator(self)

    # Internals
    def _check(self, method: str, params: dict[str, Any]) -> None:
        shape = _MODEL.operation_model(_OPERATIONS[method]).input_shape
        source = params.get("CopySource")
        if isinstance(source, dict):  # boto3 turns the dict into "bucket/key" before this
            params = params | {"CopySource": f"{source['Bucket']}/{source['Key']}"}
        report = ParamValidator().validate(params, shape)
        if report.has_errors():
            raise ParamValidationError(report=report.generate_report())

    def _read(self, method: str, params: dict[str, Any]) -> Stored:
        self._check(method, params)
        stored = self._objects.get((params["Bucket"], params["Key"]))
        if stored is None:
            self._charge(f"s3:{_OPERATIONS[method]}", S3_REQUEST_SECONDS)
            code = "NoSuchKey" if method == "get_object" else "404"
            raise _error(code, "The specified key does not exist.", _OPERATIONS[method], 404)
        if "IfMatch" in params and params["IfMatch"] != stored.etag:
            raise _error("PreconditionFailed", "At least one precondition failed", method)
        return stored

    def _source(self, params: dict[str, Any], operation: str) -> Stored:
        source = params["CopySource"]
        stored = self._objects.get((source["Bucket"], source["Key"]))
        if stored is None:
            raise _error("NoSuchKey", "The specified key does not exist.", operation, 404)
        if "CopySourceIfMatch" in params and params["CopySourceIfMatch"] != stored.etag:
            raise _error("PreconditionFailed", "At least one precondition failed", operation)
        return stored

    def _get(self, bucket: str, key: str) -> tuple[Segment, ...]:
        return self._objects[(bucket, key)].segments

    def _new_file(self) -> Path:
        return self._folder / f"{next(self._files)}.bin"

    def _file_segments(self, data: bytes) -> tuple[Segment, ...]:
        if not data:
            return ()
        path = self._new_file()
        path.write_bytes(data)
        return (Segment(len(data), path),)

    def _store(self, bucket: str, key: str, segments: tuple[Segment, ...]) -> Stored:
        tag = f"{key}:{sum(s.length for s in segments)}:{next(self._files)}"
        stored = Stored(segments, _etag(tag.encode()))
        with self._lock:
            if (bucket, key) not in self._objects:
                self._sorted.pop(bucket, None)
            self._objects[(bucket, key)] = stored
        return stored

    def _listing(self, bucket: str) -> list[str]:
        with self._lock:
            if bucket not in self._sorted:
                self._sorted[bucket] = sorted(k for b, k in self._objects if b == bucket)
            return self._sorted[bucket]


class _Paginator:
    def __init__(self, s3: FakeS3) -> None:
        self._s3 = s3

    def paginate(self, PaginationConfig: Any = None, **params: Any) -> Iterator[dict[str, Any]]:
        while True:
            page = self._s3.list_objects_v2(**params)
            yield page
            if not page["IsTruncated"]:
                return
            params["ContinuationToken"] = page["NextContinuationToken"]


def _etag(data: bytes) -> str:
    return f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'


def _range(header: str, size: int) -> tuple[int, int]:
    """The first and last byte of a ``bytes=a-b`` header (``a-``: to the end)."""
    first, _, last = header.removeprefix("bytes=").partition("-")
    return int(first), min(int(last) if last else size - 1, size - 1)
