"""S3: the source read by ranged GETs and shards built server-side with UploadPartCopy.

Every read and copy of the source carries its ETag (``IfMatch`` / ``CopySourceIfMatch``),
so a source replaced mid-split fails with an InputError instead of mixing versions; the
ETag is checked once more before any shard is completed. Shards are multipart uploads
completed only when every shard is done; on failure they are all aborted.
"""

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from botocore.exceptions import ClientError

from batchinfer.errors import InputError
from batchinfer.multipart import MAX_PART_SIZE, MIN_PART_SIZE, copy_part_ranges
from batchinfer.uris import S3Location

# Size of the parts uploaded when shards are written (gzip re-chunking).
WRITE_PART_SIZE = 8 * 1024**2


@contextlib.contextmanager
def source_errors(
    uri: str, etag: str | None, doing: str = "split", again: str = "run the split again"
) -> Iterator[None]:
    """Turn S3's "missing" and "precondition failed" answers into InputErrors naming ``uri``,
    what was ``doing`` with it and what to do ``again``."""
    try:
        yield
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("PreconditionFailed", "412"):
            raise InputError(
                f"{uri} changed while being {doing} (its ETag is no longer {etag}); {again}"
            ) from None
        if code in ("NoSuchKey", "404", "NotFound"):
            raise InputError(f"{uri}: object not found") from None
        raise


class S3Source:
    """An S3 input object, pinned to the ETag (and version) seen when the split started."""

    copy_workers = 8  # UploadPartCopy runs inside S3: parallel requests only wait
    min_copy = MIN_PART_SIZE  # every part but the last: what UploadPartCopy may copy

    def __init__(self, client: Any, location: S3Location) -> None:
        self.client = client
        self.location = location
        self.uri = location.uri
        self.name = location.key.rsplit("/", 1)[-1]
        self.parent_prefix = location.uri[: len(location.uri) - len(self.name)]
        if not self.name:
            raise InputError(f"{self.uri}: names a folder, not an object")
        with source_errors(self.uri, None):
            head = client.head_object(Bucket=location.bucket, Key=location.key)
        self.size = head["ContentLength"]
        self.etag = head["ETag"]
        self.version_id = head.get("VersionId")
        self.content_type = head.get("ContentType", "binary/octet-stream")

    def _get(self, **kwargs: Any) -> Any:
        with source_errors(self.uri, self.etag):
            return self.client.get_object(
                Bucket=self.location.bucket, Key=self.location.key, IfMatch=self.etag, **kwargs
            )

    def read_range(self, start: int, end: int) -> bytes:
        data: bytes = self._get(Range=f"bytes={start}-{end - 1}")["Body"].read()
        return data

    def open_stream(self) -> BinaryIO:
        body: BinaryIO = self._get()["Body"]
        return body

    def copy_to(
        self, writer: "S3ShardWriter", start: int, end: int, on_part: Callable[[int], None]
    ) -> None:
        copy_source = {"Bucket": self.location.bucket, "Key": self.location.key}
        if self.version_id and self.version_id != "null":
            copy_source["VersionId"] = self.version_id
        for part_start, part_end in copy_part_ranges(start, end, MAX_PART_SIZE):
            with source_errors(self.uri, self.etag):
                result = self.client.upload_part_copy(
                    Bucket=writer.location.bucket,
                    Key=writer.location.key,
                    UploadId=writer.upload_id,
                    PartNumber=len(writer.parts) + 1,
                    CopySource=copy_source,
                    CopySourceRange=f"bytes={part_start}-{part_end - 1}",
                    CopySourceIfMatch=self.etag,
                )
            writer.add_part(result["CopyPartResult"]["ETag"], part_end - part_start)
            on_part(part_end - part_start)

    def check_unchanged(self) -> None:
        with source_errors(self.uri, self.etag):
            head = self.client.head_object(Bucket=self.location.bucket, Key=self.location.key)
        if head["ETag"] != self.etag:
            raise InputError(
                f"{self.uri} changed while being split (its ETag is no longer {self.etag}); "
                "run the split again"
            )

    def close(self) -> None:
        """Nothing to release: every request is self-contained."""


class S3ShardWriter:
    """One shard as a multipart upload, filled by part copies or by buffered writes."""

    def __init__(
        self,
        client: Any,
        location: S3Location,
        content_type: str,
        *,
        resume: dict[str, Any] | None = None,
        pending: bytes = b"",
        metadata: dict[str, str] | None = None,
    ) -> None:
        """A new multipart upload (the object to have user ``metadata``), or with
        ``resume`` (what :meth:`saved` returned) the one saved then, its bytes not yet in a
        part (``pending``) written again."""
        self.client = client
        self.location = location
        if resume is None:
            self.upload_id = client.create_multipart_upload(
                Bucket=location.bucket,
                Key=location.key,
                ContentType=content_type,
                **({"Metadata": metadata} if metadata else {}),
            )["UploadId"]
        else:
            self.upload_id = resume["upload_id"]
        self.parts: list[dict[str, Any]] = list(resume["parts"]) if resume else []
        self.size = resume["size"] if resume else 0
        self._buffer = bytearray(pending)

    def saved(self) -> dict[str, Any]:
        """The upload and its parts so far, to resume it in another process."""
        return {"upload_id": self.upload_id, "parts": self.parts, "size": self.size}

    @property
    def pending(self) -> bytes:
        """The bytes written that are in no part yet."""
        return bytes(self._buffer)

    def add_part(self, etag: str, size: int) -> None:
        self.parts.append({"PartNumber": len(self.parts) + 1, "ETag": etag})
        self.size += size

    def write(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) >= WRITE_PART_SIZE:
            self._upload_buffer()

    def _upload_buffer(self) -> None:
        body = bytes(self._buffer)
        self._buffer.clear()
        result = self.client.upload_part(
            Bucket=self.location.bucket,
            Key=self.location.key,
            UploadId=self.upload_id,
            PartNumber=len(self.parts) + 1,
            Body=body,
        )
        self.add_part(result["ETag"], len(body))

    def flush(self) -> None:
        """Upload the bytes written so far as a part (at least 5 MiB unless it is the last)."""
        if self._buffer:
            self._upload_buffer()

    def finish(self) -> int:
        if self._buffer or not self.parts:
            self._upload_buffer()
        return self.size

    def complete(self) -> None:
        self.client.complete_multipart_upload(
            Bucket=self.location.bucket,
            Key=self.location.key,
            UploadId=self.upload_id,
            MultipartUpload={"Parts": self.parts},
        )

    def abort(self) -> None:
        self.client.abort_multipart_upload(
            Bucket=self.location.bucket, Key=self.location.key, UploadId=self.upload_id
        )


class S3Sink:
    """An S3 prefix receiving shards; ``prefix`` is ``s3://bucket/folder/``."""

    def __init__(self, client: Any, location: S3Location, content_type: str) -> None:
        self.client = client
        self.location = location
        self.prefix = location.child("").uri
        self.content_type = content_type
        self._writers: list[S3ShardWriter] = []
        self._lock = threading.Lock()

    def uri(self, name: str) -> str:
        return self.location.child(name).uri

    def open(self, name: str) -> S3ShardWriter:
        writer = S3ShardWriter(self.client, self.location.child(name), self.content_type)
        with self._lock:
            self._writers.append(writer)
        return writer

    def commit(self) -> None:
        """Complete every multipart upload; the ones not yet completed stay for abort()."""
        done = 0
        try:
            for writer in self._writers:
                writer.complete()
                done += 1
        finally:
            del self._writers[:done]

    def abort(self) -> None:
        """Abort every multipart upload not yet completed (best effort, keeps going)."""
        for writer in self._writers:
            with contextlib.suppress(ClientError):
                writer.abort()
        self._writers.clear()

    def put(self, name: str, data: bytes) -> None:
        """Write a small JSON object (the manifest, the index)."""
        location = self.location.child(name)
        self.client.put_object(
            Bucket=location.bucket, Key=location.key, Body=data, ContentType="application/json"
        )
