"""An S3 prefix as the place a local job publishes its outputs (spec R12: each input object
gives one output named after it; R19: a file with any failed record gets no output).

Each object appears only whole: a file goes up as one PutObject or, when large, as a multipart
upload that S3 shows only once it is completed (boto3's transfer aborts it on failure).
"""

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from batchinfer.engine.s3_requests import naming, not_found
from batchinfer.multipart import MIN_PART_SIZE
from batchinfer.uris import S3Location, parse_s3_uri

# Objects at least this large go up in parts of this size, several at once.
PART_SIZE = 8 * 1024**2
UPLOAD_THREADS = 8
# DeleteObjects takes at most this many keys a request.
DELETE_BATCH = 1000
TEXT_TYPE = "application/json"


class S3Place:
    """The objects below ``s3://bucket/prefix/``, named relative to it."""

    def __init__(self, client: Any, uri: str, *, part_size: int = PART_SIZE) -> None:
        """``uri`` is the prefix (a trailing ``/`` is implied); ``part_size`` at least S3's
        5 MiB part minimum."""
        self.client = client
        self._prefix = parse_s3_uri(uri, field="--output").child("")
        self.location = self._prefix.uri
        from boto3.s3.transfer import TransferConfig  # boto3 only where S3 is reached (start-up)

        self._transfer = TransferConfig(
            multipart_threshold=max(part_size, MIN_PART_SIZE),
            multipart_chunksize=max(part_size, MIN_PART_SIZE),
            max_concurrency=UPLOAD_THREADS,
        )

    @property
    def work_parent(self) -> None:
        """The job's working folder goes in the system's temporary folder."""
        return None

    def _object(self, name: str) -> S3Location:
        return self._prefix.child(name)

    def names(self) -> list[str]:
        """Every object below the prefix, relative to it, sorted (folder markers left out)."""
        found = []
        with naming(self.location):
            paginator = self.client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self._prefix.bucket, Prefix=self._prefix.key):
                found += [obj["Key"] for obj in page.get("Contents", [])]
        start = len(self._prefix.key)
        return sorted(key[start:] for key in found if not key.endswith("/"))

    def read_text(self, name: str) -> str | None:
        """The object ``name`` as UTF-8 text, or None when there is none."""
        target = self._object(name)
        with naming(target.uri):
            try:
                body = self.client.get_object(Bucket=target.bucket, Key=target.key)["Body"]
            except ClientError as exc:
                if not_found(exc):
                    return None
                raise
            data: bytes = body.read()
        return data.decode("utf-8")

    def size(self, name: str) -> int | None:
        """The size of the object ``name``, or None when there is none."""
        target = self._object(name)
        with naming(target.uri):
            try:
                head = self.client.head_object(Bucket=target.bucket, Key=target.key)
            except ClientError as exc:
                if not_found(exc):
                    return None
                raise
        size: int = head["ContentLength"]
        return size

    def put_file(self, source: Path, name: str) -> None:
        """Upload ``source`` as ``name``, replacing it; whole or not at all."""
        from boto3.exceptions import S3UploadFailedError  # boto3 only where S3 is reached

        target = self._object(name)
        with naming(target.uri):
            try:
                self.client.upload_file(
                    str(source), target.bucket, target.key, Config=self._transfer
                )
            except S3UploadFailedError as exc:  # S3's answer, wrapped by the transfer
                if isinstance(exc.__context__, ClientError):
                    raise exc.__context__ from None
                raise

    def put_text(self, name: str, text: str) -> None:
        """Write ``text`` (UTF-8) as the object ``name``, replacing it."""
        target = self._object(name)
        with naming(target.uri):
            self.client.put_object(
                Bucket=target.bucket,
                Key=target.key,
                Body=text.encode("utf-8"),
                ContentType=TEXT_TYPE if name.endswith(".json") else "text/plain",
            )

    def remove(self, names: Iterable[str]) -> None:
        """Delete the objects ``names`` (those that do not exist are no error)."""
        keys = [self._object(name).key for name in names]
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start : start + DELETE_BATCH]
            with naming(self.location):
                answer = self.client.delete_objects(
                    Bucket=self._prefix.bucket,
                    Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
                )
                for error in answer.get("Errors", [])[:1]:  # the first is reason enough
                    raise ClientError({"Error": error}, "DeleteObjects")
