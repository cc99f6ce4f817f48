"""The ordered merge of shard outputs into one object: one multipart upload that follows
the part plan of :func:`batchinfer.multipart.plan_pieces`; Parquet outputs are joined into
one Parquet file (their row groups under one new footer).

Copy parts are UploadPartCopy requests with ``CopySourceRange``; upload parts are ranged
GETs concatenated in memory. Every read and copy carries the ETag seen when the sizes were
taken, so an output replaced meanwhile fails the merge instead of mixing versions. The
upload is completed only when every part is in and aborted on any error, so the target
appears whole or not at all. :func:`copy_pinned` copies one object whole the same way (or by
one CopyObject), pinned to an ETag measured earlier.
"""

import contextlib
from concurrent.futures import ThreadPoolExecutor
from functools import partial
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
    plan_pieces,
)
from batchinfer.pipeline.storage.s3io import parquet_footer
from batchinfer.transform.parquet_files import data_span, joined_footer
from batchinfer.transform.parquet_footer import MAGIC, ParquetError
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
    pinned: list[str | None] = [*(etags or [head["ETag"] for head in heads])]
    pieces = [Piece(index, 0, head["ContentLength"]) for index, head in enumerate(heads)]
    _upload(s3, _PartSender(s3, [*sources], pinned), pieces, target, heads, limits)


def merge_parquet(
    s3: Any, sources: list[S3Location], target: S3Location, limits: PartLimits = S3_LIMITS
) -> None:
    """Join the Parquet objects ``sources`` into one Parquet object ``target``: their row
    groups in order, copied by S3 where parts are large enough, under one footer that lists
    them all (:func:`batchinfer.transform.parquet_files.joined_footer`). InputError naming
    the object that is not a whole Parquet file or has another schema than the first."""
    heads = [s3.head_object(Bucket=s.bucket, Key=s.key) for s in sources]
    pinned = [head["ETag"] for head in heads]
    footers = [
        parquet_footer(s3, source, head["ContentLength"], etag)
        for source, head, etag in zip(sources, heads, pinned, strict=True)
    ]
    try:
        tail = joined_footer(footers, [source.uri for source in sources])
    except ParquetError as exc:
        raise InputError(f"{target.uri}: cannot merge the shard outputs: {exc}") from None
    # Source 0 is the magic, the last the footer; the objects lie between.
    literals = {0: MAGIC, len(sources) + 1: tail}
    pieces = [
        Piece(0, 0, len(MAGIC)),
        *(Piece(i + 1, *data_span(footer)) for i, footer in enumerate(footers)),
        Piece(len(sources) + 1, 0, len(tail)),
    ]
    sender = _PartSender(s3, [None, *sources, None], [None, *pinned, None], literals)
    _upload(s3, sender, pieces, target, heads, limits)


def _upload(
    s3: Any,
    sender: "_PartSender",
    pieces: list[Piece],
    target: S3Location,
    heads: list[dict[str, Any]],
    limits: PartLimits,
) -> None:
    """Write ``pieces`` in order into ``target`` by one multipart upload whose parts
    ``sender`` sends, with the first source's content type."""
    try:
        plan = plan_pieces(pieces, limits)
    except InputError as exc:
        raise InputError(
            f"{target.uri}: cannot merge the shard outputs: {exc}; "
            "run without merge, or with fewer shards"
        ) from None
    kept = {"ContentType": heads[0]["ContentType"]} if heads and "ContentType" in heads[0] else {}
    upload_id = s3.create_multipart_upload(Bucket=target.bucket, Key=target.key, **kept)["UploadId"]
    request = {"Bucket": target.bucket, "Key": target.key, "UploadId": upload_id}
    try:
        sent = sender.send_all(request, plan)
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
    """Sends the parts of one multipart upload, each read from ``sources`` (the versions
    pinned by ``etags``) or, for a source index in ``literals``, from those bytes."""

    def __init__(
        self,
        s3: Any,
        sources: list[S3Location | None],
        etags: list[str | None],
        literals: dict[int, bytes] | None = None,
    ) -> None:
        self.s3 = s3
        self.sources = sources
        self.etags = etags
        self.literals = literals or {}

    def send_all(self, request: dict[str, str], plan: list[Part]) -> list[str]:
        """Send every part of ``plan`` to the upload ``request`` (bucket, key, upload id),
        numbered in order; their ETags. The first error cancels the parts not yet started."""
        pool = ThreadPoolExecutor(WORKERS)
        try:
            return list(pool.map(partial(self.send, request), range(1, len(plan) + 1), plan))
        finally:
            pool.shutdown(cancel_futures=True)

    def send(self, request: dict[str, str], number: int, part: Part) -> str:
        """Send ``part`` as part ``number``; its ETag."""
        if isinstance(part, CopyPart) and part.piece.source not in self.literals:
            source = self.sources[part.piece.source]
            assert source is not None  # every index but the literals' names an object
            answer = self.s3.upload_part_copy(
                **request,
                PartNumber=number,
                CopySource={"Bucket": source.bucket, "Key": source.key},
                CopySourceRange=_byte_range(part.piece),
                CopySourceIfMatch=self.etags[part.piece.source],
            )
            return answer["CopyPartResult"]["ETag"]
        body = b"".join(self._read(piece) for piece in part.pieces)
        return self.s3.upload_part(**request, PartNumber=number, Body=body)["ETag"]

    def _read(self, piece: Piece) -> bytes:
        if piece.source in self.literals:
            return self.literals[piece.source][piece.start : piece.end]
        source = self.sources[piece.source]
        assert source is not None
        return self.s3.get_object(
            Bucket=source.bucket,
            Key=source.key,
            Range=_byte_range(piece),
            IfMatch=self.etags[piece.source],
        )["Body"].read()


def _byte_range(piece: Piece) -> str:
    return f"bytes={piece.start}-{piece.end - 1}"
