"""One pass over an input's records (after decompression): how many, the largest, and a
uniform random sample for calibration.

Records are framed as the job frames them (spec R6: what a record is under each SplitType): with
SplitType Line a record is the bytes up to and including ``\\n`` (a last line without one counts;
an empty line is one too, unless blank lines are skipped); with None the whole object is one
record. The sample is a reservoir shared by every input, so it is
spread across all of them; it is drawn with skips (Li's algorithm L), so the work per record stays
in C (``bytes.split``, ``max``) however large the input.
"""

import math
import random
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from batchinfer.transform.records import BLANK_LINES

# The blank lines a scan skips, as it holds lines: without their "\n".
_BLANK = frozenset(line.removesuffix(b"\n") for line in BLANK_LINES)


@dataclass(frozen=True)
class LargestRecord:
    number: int  # 1-based, as errors name records
    size: int  # bytes, with its line ending


class Reservoir:
    """A uniform sample of at most ``capacity`` records of everything offered, each kept
    with its position so the sample can be written back in input order."""

    def __init__(self, capacity: int, seed: int = 0) -> None:
        self.capacity = capacity
        self.items: list[tuple[int, bytes]] = []
        self.seen = 0
        self._rng = random.Random(seed)
        self._weight = 1.0
        self._next = capacity  # position of the next record to take once full
        if capacity:
            self._advance()
            self._next -= 1  # the first skip counts from the last filling record

    def _advance(self) -> None:
        self._weight *= math.exp(math.log(self._rng.random() or 1e-300) / self.capacity)
        log_keep = math.log1p(-self._weight)
        if log_keep == 0.0:  # only after astronomically many records: stop replacing
            self._next = sys.maxsize
            return
        self._next += math.floor(math.log(self._rng.random() or 1e-300) / log_keep) + 1

    def offer(self, lines: list[bytes]) -> None:
        """Offer consecutive records in input order, given without their ``\\n``."""
        start = self.seen
        self.seen += len(lines)
        if not self.capacity:
            return
        filling = min(len(lines), self.capacity - len(self.items))
        self.items += [(start + i, lines[i] + b"\n") for i in range(filling)]
        while self._next < self.seen:
            slot = self._rng.randrange(self.capacity)
            self.items[slot] = (self._next, lines[self._next - start] + b"\n")
            self._advance()

    def sample(self) -> list[bytes]:
        """The sampled records in input order, each ending with ``\\n``."""
        return [record for _, record in sorted(self.items)]


class LineScan:
    """Counts the Line records of one input fed in chunks, and finds its largest; with
    ``skip_blank_lines`` empty lines are no records."""

    def __init__(self, reservoir: Reservoir, skip_blank_lines: bool = False) -> None:
        self.records = 0
        self.bytes = 0
        self.largest: LargestRecord | None = None
        self._reservoir = reservoir
        self._skip_blank_lines = skip_blank_lines
        self._carry = b""

    def feed(self, chunk: bytes) -> None:
        self.bytes += len(chunk)
        lines = (self._carry + chunk).split(b"\n")
        self._carry = lines.pop()
        self._take(lines, terminated=True)

    def finish(self) -> "LineScan":
        if self._carry:
            self._take([self._carry], terminated=False)
            self._carry = b""
        return self

    def _take(self, lines: list[bytes], *, terminated: bool) -> None:
        if self._skip_blank_lines and terminated:
            lines = [line for line in lines if line not in _BLANK]
        if not lines:
            return
        lengths = list(map(len, lines))
        longest = max(lengths)
        size = longest + terminated
        if self.largest is None or size > self.largest.size:
            self.largest = LargestRecord(self.records + lengths.index(longest) + 1, size)
        self.records += len(lines)
        self._reservoir.offer(lines)


def scan_lines(
    chunks: Iterable[bytes], reservoir: Reservoir, skip_blank_lines: bool = False
) -> LineScan:
    """Scan an input given as chunks of its (decompressed) bytes."""
    scan = LineScan(reservoir, skip_blank_lines)
    for chunk in chunks:
        scan.feed(chunk)
    return scan.finish()
