"""The ordered merge of shard outputs into one object: one multipart upload that follows
the part plan of :func:`batchinfer.multipart.plan_concatenation`.

Copy parts are UploadPartCopy requests with ``CopySourceRange``; upload parts are ranged
GETs concatenated in memory. Every read and copy carries the ETag seen when the sizes were
taken, so an output replaced meanwhile fails the merge instead of mixing versions. The
upload is completed only when every part is in and aborted on any error, so the target
appears whole or not at all. :func:`copy_pinned` copies one object whole the same way (or by
one CopyObject), pinned to an ETag measured earlier.
"""

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from batchinfer.errors import InputError
from batchinfer.multipart import (
    MAX_PART_SIZE,
    S3_LIMITS,
    CopyPart,
    Part,
    PartLimits,
    Piece,
    plan_concatenation,
)
from batchinfer.uris import S3Location

# Parts sent at once: copies run inside S3, and each upload part holds at most
# ``PartLimits.max_upload`` bytes (twice, while it is joined) in memory.
WORKERS = 8


def merge_objects(
    s3: Any,
    sources: list[S3Location],
    target: S3Location,
    limits: PartLimits = S3_LIMITS,
    *,
    etags: list[str] | None = None,
) -> None:
    """Concatenate ``sources`` in order into ``target``; InputError naming ``target`` when
    S3 cannot hold the result in one object. ``etags``: the versions of the sources to read
    (default: those their HEAD answers); any other version fails the merge."""
    heads = [s3.head_object(Bucket=s.bucket, Key=s.key) for s in sources]
    try:
        plan = plan_concatenation([head["ContentLength"] for head in heads], limits)
    except InputError as exc:
        raise InputError(
            f"{target.uri}: cannot merge the shard outputs: {exc}; "
            "run without merge, or with fewer shards"
        ) from None
    kept = {"ContentType": heads[0]["ContentType"]} if heads and "ContentType" in heads[0] else {}
    upload_id = s3.create_multipart_upload(Bucket=target.bucket, Key=target.key, **kept)["UploadId"]
    request = {"Bucket": target.bucket, "Key": target.key, "UploadId": upload_id}
    try:
        pinned = etags or [head["ETag"] for head in heads]
        sender = _PartSender(s3, sources, pinned, request)
        sent = sender.send_all(plan)
        parts = [{"PartNumber": number, "ETag": etag} for number, etag in enumerate(sent, 1)]
        s3.complete_multipart_upload(**request, MultipartUpload={"Parts": parts})
    except BaseException:
        # The first error is the one to tell: an upload that was completed after all (its
        # answer lost) cannot be aborted, and NoSuchUpload would hide why the merge failed.
        with contextlib.suppress(ClientError):
            s3.abort_multipart_upload(**request)
        raise


def copy_pinned(s3: Any, source: S3Location, target: S3Location, etag: str, size: int) -> None:
    """Copy ``source`` server-side to ``target`` if it is still the version ``etag`` (S3
    answers PreconditionFailed otherwise): one CopyObject up to 5 GB, the largest it copies,
    else a multipart copy of parts side by side."""
    if size <= MAX_PART_SIZE:
        s3.copy_object(
            CopySource={"Bucket": source.bucket, "Key": source.key},
            CopySourceIfMatch=etag,
            Bucket=target.bucket,
            Key=target.key,
        )
    else:
        merge_objects(s3, [source], target, etags=[etag])


class _PartSender:
    """Sends the parts of one multipart upload ``request`` (bucket, key, upload id), each
    read from the sources' versions pinned by ``etags``."""

    def __init__(
        self, s3: Any, sources: list[S3Location], etags: list[str], request: dict[str, str]
    ) -> None:
        self.s3 = s3
        self.sources = sources
        self.etags = etags
        self.request = request

    def send_all(self, plan: list[Part]) -> list[str]:
        """Send every part of ``plan``, numbered in order; their ETags. The first error
        cancels the parts not yet started."""
        pool = ThreadPoolExecutor(WORKERS)
        try:
            return list(pool.map(self.send, range(1, len(plan) + 1), plan))
        finally:
            pool.shutdown(cancel_futures=True)

    def send(self, number: int, part: Part) -> str:
        """Send ``part`` as part ``number``; its ETag."""
        if isinstance(part, CopyPart):
            source = self.sources[part.piece.source]
            answer = self.s3.upload_part_copy(
                **self.request,
                PartNumber=number,
                CopySource={"Bucket": source.bucket, "Key": source.key},
                CopySourceRange=_byte_range(part.piece),
                CopySourceIfMatch=self.etags[part.piece.source],
            )
            return answer["CopyPartResult"]["ETag"]
        body = b"".join(self._read(piece) for piece in part.pieces)
        return self.s3.upload_part(**self.request, PartNumber=number, Body=body)["ETag"]

    def _read(self, piece: Piece) -> bytes:
        source = self.sources[piece.source]
        return self.s3.get_object(
            Bucket=source.bucket,
            Key=source.key,
            Range=_byte_range(piece),
            IfMatch=self.etags[piece.source],
        )["Body"].read()


def _byte_range(piece: Piece) -> str:
    return f"bytes={piece.start}-{piece.end - 1}"
