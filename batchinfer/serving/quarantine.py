"""Per-record quarantine in the model server: the records of a refused request told apart.

A transform job's requests come from SageMaker's agent, which fails the job on a 4xx and
cannot retry a part of a request. So with quarantine asked for, the server itself finds the
refused records of a request it would refuse: it bisects the request's records (whole
lines, as the request framed them), asking its own handler for each half, until each
refused run is one record; the others are answered as one request would answer them.

Cost: a request of ``n`` records with ``b`` refused ones takes at most about
``2 * b * log2(n)`` more passes through the handler. A request whose records are all
refused, or more of them than the file may set aside, is refused as a whole, as without
quarantine: a model that refuses everything fails its file after a bounded number of
passes, not a storm of them.
"""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from batchinfer.serving.server_errors import RequestError

# Refused records isolated before any record is answered that make the model one that
# refuses everything: the request is refused whole. (The halves are tried first half first,
# so a request whose first 16 records are all refused is refused whole too.)
REFUSED_BEFORE_ANY_ANSWER = 16


@dataclass(frozen=True)
class Refused:
    """A record set aside: its place in the request (from 0) and the handler's reason."""

    record: int
    reason: str


def answer_apart(
    answer: Callable[[bytes], bytes],
    records: Sequence[bytes],
    refusal: RequestError,
    *,
    most_refused: int,
) -> list[bytes | Refused]:
    """The answers of ``records`` (a request that ``answer`` refused with ``refusal``),
    in their order: the answer of each run of records it takes, and a :class:`Refused` for
    each one it refuses alone. Raises ``refusal`` when every record is refused, when more
    than ``most_refused`` are, or when :data:`REFUSED_BEFORE_ANY_ANSWER` are before any is
    answered."""
    parts: list[bytes | Refused] = []
    refused = 0
    answered = False

    def attempt(first: int, stop: int) -> None:
        nonlocal refused, answered
        try:
            parts.append(answer(b"".join(records[first:stop])))
            answered = True
            return
        except RequestError as exc:  # any other error is the model's (500): not caught
            if stop - first > 1:
                split(first, stop)
                return
            refused += 1
            if refused > most_refused or (not answered and refused >= REFUSED_BEFORE_ANY_ANSWER):
                raise refusal from None
            parts.append(Refused(first, exc.message))

    def split(first: int, stop: int) -> None:
        middle = (first + stop) // 2
        attempt(first, middle)
        attempt(middle, stop)

    if len(records) < 2:
        raise refusal
    split(0, len(records))
    if not answered:
        raise refusal
    return parts


# A refused record's line in an answer: a NUL byte, which neither CSV nor JSON Lines answers
# hold, then the record's place and reason as JSON. The engines turn these lines into the
# errors file and take them out of the output.
MARKER = b"\x00"


def refused_line(refused: Refused) -> bytes:
    """The in-band line that stands for ``refused`` in an answer."""
    return (
        MARKER + json.dumps({"record": refused.record, "reason": refused.reason}).encode() + b"\n"
    )


def joined(parts: list[bytes | Refused]) -> bytes:
    """The answer of a request told apart: its runs' answers, each ending its last line (as
    AssembleWith Line ends each answer), with a marker line in place of each refused
    record."""
    return b"".join(
        (part if part.endswith(b"\n") or not part else part + b"\n")
        if isinstance(part, bytes)
        else refused_line(part)
        for part in parts
    )
