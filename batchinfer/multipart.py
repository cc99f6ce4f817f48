"""S3 multipart uploads: the part limits, and the part plans that respect them.

A plan works on sizes only. :func:`copy_part_ranges` cuts one byte range into parts S3
can copy; :func:`plan_concatenation` lays out the parts of one object made of several
sources in order, copying what S3 can copy and downloading only what it must.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from batchinfer.errors import InputError

# S3's limits: every part but the last holds at least MIN_PART_SIZE bytes, any part at most
# MAX_PART_SIZE; an upload has at most MAX_PARTS parts and makes at most MAX_OBJECT_SIZE.
MIN_PART_SIZE = 5 * 1024**2
MAX_PART_SIZE = 5 * 1024**3
MAX_PARTS = 10_000
MAX_OBJECT_SIZE = 5 * 1024**4
# The largest part assembled from downloads; it is held in memory while it is uploaded.
UPLOAD_PART_SIZE = 16 * 1024**2


def copy_part_ranges(start: int, end: int, max_part: int) -> list[tuple[int, int]]:
    """Split ``[start, end)`` into the fewest equal parts of at most ``max_part`` bytes.

    A single part may be any size (it is the last part); several parts are each larger than
    ``max_part / 2`` and so far above the 5 MiB minimum. An empty range has no parts.
    """
    count = -(-(end - start) // max_part)
    if count <= 0:
        return []
    bounds = [start + (end - start) * i // count for i in range(count + 1)]
    return list(pairwise(bounds))


@dataclass(frozen=True)
class PartLimits:
    """The limits a plan keeps; S3's by default. ``max_upload`` bounds the parts assembled
    from downloads and must leave room for two minimum parts."""

    min_part: int = MIN_PART_SIZE
    max_part: int = MAX_PART_SIZE
    max_upload: int = UPLOAD_PART_SIZE
    max_parts: int = MAX_PARTS
    max_object: int = MAX_OBJECT_SIZE

    def __post_init__(self) -> None:
        if not 0 < 2 * self.min_part <= self.max_upload <= self.max_part:
            raise ValueError(f"part limits need 0 < 2 * min_part <= max_upload <= max_part: {self}")


@dataclass(frozen=True)
class Piece:
    """Bytes ``[start, end)`` of the source at index ``source``."""

    source: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class CopyPart:
    """A part S3 copies from one source's byte range (UploadPartCopy)."""

    piece: Piece

    @property
    def pieces(self) -> tuple[Piece, ...]:
        return (self.piece,)

    @property
    def size(self) -> int:
        return self.piece.size


@dataclass(frozen=True)
class UploadPart:
    """A part uploaded from its pieces, downloaded and concatenated in order."""

    pieces: tuple[Piece, ...]

    @property
    def size(self) -> int:
        return sum(piece.size for piece in self.pieces)


Part = CopyPart | UploadPart
S3_LIMITS = PartLimits()


def plan_concatenation(sizes: Sequence[int], limits: PartLimits = S3_LIMITS) -> list[Part]:
    """The parts of one object made of whole sources of ``sizes``, concatenated in order
    (:func:`plan_pieces` of each source's every byte)."""
    return plan_pieces([Piece(index, 0, size) for index, size in enumerate(sizes)], limits)


def plan_pieces(pieces: Sequence[Piece], limits: PartLimits = S3_LIMITS) -> list[Part]:
    """The parts of one object made of ``pieces`` (byte ranges of sources), in order.

    A piece of at least ``min_part`` bytes is copied by S3 in ranges of at most
    ``max_part``. Smaller pieces are downloaded and gathered into upload parts of at most
    ``max_upload``. A gathered run still below ``min_part`` when a large piece follows takes
    the head of that piece to reach ``min_part`` (or the whole piece when the rest would be
    too small to copy), so each run of small pieces costs at most ``2 * min_part`` bytes
    downloaded besides its own. A small run at the very end is the last part, which may be
    small, and is copied when it is a single piece. Empty pieces take no part; an empty
    object is one empty upload part. InputError when the object would exceed ``max_object``
    bytes or ``max_parts`` parts.
    """
    total = sum(piece.size for piece in pieces)
    if total > limits.max_object:
        raise InputError(
            f"{total} bytes is more than the {limits.max_object} bytes an object may hold"
        )
    planner = _Planner(limits)
    for piece in pieces:
        planner.add(piece)
    parts = planner.finish()
    if len(parts) > limits.max_parts:
        raise InputError(
            f"{len(pieces)} sources of {total} bytes need {len(parts)} parts, more than the "
            f"{limits.max_parts} one upload may have"
        )
    return parts


class _Planner:
    """Builds a plan source by source, holding the pieces of the upload part being gathered."""

    def __init__(self, limits: PartLimits) -> None:
        self.limits = limits
        self.parts: list[Part] = []
        self.pending: list[Piece] = []
        self.pending_size = 0

    def add(self, piece: Piece) -> None:
        if piece.size < 0:
            raise ValueError(f"source {piece.source} has a negative size: {piece.size}")
        if piece.size < self.limits.min_part:
            self._gather(piece)
            return
        copied_from = piece.start
        if self.pending:
            short = self.limits.min_part - self.pending_size
            if short > 0:
                head = piece.size if piece.size - short < self.limits.min_part else short
                copied_from = piece.start + head
                self._gather(Piece(piece.source, piece.start, copied_from))
            self._flush()
        for start, end in copy_part_ranges(copied_from, piece.end, self.limits.max_part):
            self.parts.append(CopyPart(Piece(piece.source, start, end)))

    def finish(self) -> list[Part]:
        if self.pending:
            self._flush()
        return self.parts or [UploadPart(())]

    def _gather(self, piece: Piece) -> None:
        """Add ``piece`` to the pending part, closing the part whenever it is full."""
        start = piece.start
        while start < piece.end:
            end = min(piece.end, start + self.limits.max_upload - self.pending_size)
            self.pending.append(Piece(piece.source, start, end))
            self.pending_size += end - start
            if self.pending_size == self.limits.max_upload:
                self._flush()
            start = end

    def _flush(self) -> None:
        pieces = tuple(self.pending)
        self.parts.append(CopyPart(pieces[0]) if len(pieces) == 1 else UploadPart(pieces))
        self.pending.clear()
        self.pending_size = 0
