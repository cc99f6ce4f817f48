"""Line-aligned cut points for an object of known size, read through small byte windows.

Every shard ends exactly after a ``\\n`` or at the end of the object (spec R6: a record is
the bytes up to and including ``\\n``; ``\\r\\n`` stays whole; a last line without ``\\n`` is
a record). A record longer than the target shard size makes its shard grow: records are
never cut.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from batchinfer.errors import InputError, ValidationError
from batchinfer.sharding.names import MAX_SHARDS

ReadRange = Callable[[int, int], bytes]

# The first window read around a cut; it doubles (up to the cap) while no newline is found.
FIRST_WINDOW = 4096
MAX_WINDOW = 1 << 20


@dataclass(frozen=True)
class ShardPlan:
    """Where to cut one object.

    ``header`` is the dropped first line (with its line ending) or None; ``ranges`` are the
    ``[start, end)`` byte ranges of the shards in order, each ending after a ``\\n`` or at
    EOF; ``whole_object`` is True when the only shard is the object itself (nothing to copy).
    """

    size: int
    header: bytes | None
    ranges: list[tuple[int, int]]

    @property
    def whole_object(self) -> bool:
        return self.header is None and self.ranges == [(0, self.size)]


def shard_count(data_size: int, *, shards: int | None, shard_size: int | None) -> int:
    """The number of shards asked for: ``shards`` itself, or ``ceil(data_size / shard_size)``.

    Exactly one of ``shards`` and ``shard_size`` must be given.
    """
    if (shards is None) == (shard_size is None):
        raise ValidationError(
            "give exactly one of shards (--shards, a count) and shard_size (--shard-size, bytes)"
        )
    if shards is not None and shards < 1:
        raise ValidationError(f"shards: {shards} must be at least 1")
    if shard_size is not None and shard_size < 1:
        raise ValidationError(f"shard_size: {shard_size} must be at least 1 byte")
    if shards is not None:
        count = shards
    else:
        assert shard_size is not None  # exactly one of the two, checked above
        count = max(1, math.ceil(data_size / shard_size))
    if count > MAX_SHARDS:
        raise ValidationError(f"{count} shards requested; the limit is {MAX_SHARDS}")
    return count


def shard_targets(data_start: int, data_size: int, count: int) -> list[int]:
    """Evenly spaced target offsets of the ``count - 1`` inner cuts of the data region."""
    return [data_start + data_size * i // count for i in range(1, count)]


def find_newline(read_range: ReadRange, size: int, start: int) -> int:
    """Offset of the first ``\\n`` at or after ``start``, or -1; reads growing windows."""
    window = FIRST_WINDOW
    while start < size:
        end = min(size, start + window)
        found = read_range(start, end).find(b"\n")
        if found >= 0:
            return start + found
        start = end
        window = min(window * 2, MAX_WINDOW)
    return -1


def plan_shards(
    size: int,
    read_range: ReadRange,
    *,
    shards: int | None = None,
    shard_size: int | None = None,
    header: bool = False,
    source: str = "",
) -> ShardPlan:
    """Cut an object of ``size`` bytes into line-aligned shards (spec R3: each input object goes
    whole to one instance; R6).

    ``read_range(start, end)`` returns the object's bytes ``[start, end)``; only small
    windows after each target offset (and the header line) are read. Give ``shards`` (a
    count) or ``shard_size`` (a target in bytes): the data is divided into that many
    equal spans and each cut moves forward to just after the next ``\\n``. Fewer shards
    result when records are longer than a span. With ``header`` the first line is dropped
    from the shards and returned in the plan. Raises InputError naming ``source`` when there
    is no data, ValidationError for bad settings.
    """
    if size <= 0:
        raise InputError(f"{source or 'input'} is empty: there is nothing to split")
    data_start = 0
    header_bytes = None
    if header:
        newline = find_newline(read_range, size, 0)
        if newline < 0 or newline + 1 == size:
            raise InputError(f"{source or 'input'} has a header line but no records")
        data_start = newline + 1
        header_bytes = read_range(0, data_start)
    count = shard_count(size - data_start, shards=shards, shard_size=shard_size)
    cuts = [data_start]
    for target in shard_targets(data_start, size - data_start, count):
        if target <= cuts[-1]:
            continue  # the previous shard grew past this target (a long record)
        newline = find_newline(read_range, size, target - 1)
        if newline < 0 or newline + 1 >= size:
            break
        cuts.append(newline + 1)
    cuts.append(size)
    return ShardPlan(size, header_bytes, list(pairwise(cuts)))
