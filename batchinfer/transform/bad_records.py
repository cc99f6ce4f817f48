"""Records set aside (``bad_records`` quarantine): how the model server marks a refused record
in its answer, and how an engine turns those marks into the errors file beside the output.

With quarantine on, the model server answers a request it would refuse with one line per
record still: the answer of each record it takes, and in place of each record it refuses a
marker line (a NUL byte, which neither CSV nor JSON Lines answers hold, then JSON giving
the reason and the record as the model got it). An answer line's place is its record's
place, so whoever reads the answers (an engine, or the pipeline's count of a transform
job's output) knows each refused record's number without knowing the requests. The engine
takes the marker lines out of the output and writes each as a line of
``<output>.errors.jsonl``: ``{"file", "record", "reason", "input"}``.

Standard library only: the pipeline's Lambdas import this module.
"""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from batchinfer.errors import InputError

# The most records of one file set aside; past it the file fails. In the model's environment
# it is also the most of one request (the server sets no more aside before it refuses the
# request whole); NO_LIMIT where the job sets none.
MAX_BAD_RECORDS_VAR = "BATCHINFER_MAX_BAD_RECORDS"
NO_LIMIT = 2**31 - 1
# Records set aside before any record of the file is answered that make the model one that
# refuses everything: its file fails rather than cost a request per record.
REFUSED_BEFORE_ANY_ANSWER = 16
MARKER = b"\x00"
ERRORS_SUFFIX = ".errors.jsonl"


def has_marks(data: bytes, *, after_line_end: bool = True) -> bool:
    """Whether a line of ``data`` (which starts a line unless ``after_line_end`` is False)
    is a marker line."""
    return (after_line_end and data.startswith(MARKER)) or b"\n" + MARKER in data


def errors_name(output: str) -> str:
    """``a.csv.out`` -> ``a.csv.out.errors.jsonl``: the records of an output set aside."""
    return output + ERRORS_SUFFIX


def lines_of(body: bytes) -> list[bytes]:
    """The lines of ``body``, each with its ``\\n`` (the last one may have none)."""
    lines = [line + b"\n" for line in body.split(b"\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def marker_line(reason: str, record: bytes) -> bytes:
    """The line that stands for a refused ``record`` in an answer."""
    text = record.rstrip(b"\r\n").decode("utf-8", "replace")
    return MARKER + json.dumps({"reason": reason, "input": text}).encode() + b"\n"


def answer_apart(
    answer: Callable[[bytes], bytes],
    records: Sequence[bytes],
    refusal: Exception,
    *,
    most_refused: int,
    reason_of: Callable[[Exception], str | None],
    refused_whole: Callable[[str], Exception],
) -> bytes:
    """The answer of ``records`` (whole lines, a request that ``answer`` refused with
    ``refusal``) told apart: bisected, each half asked of ``answer``, until each refused
    run is one record; the answers of the runs taken, each ending its last line, in order,
    with :func:`marker_line` in place of each record refused alone.

    ``reason_of`` says why an exception refused a request, or None where it is no refusal
    (a 5xx, a timeout: the platform's to retry), which is raised as it is. The request is
    refused whole (``refused_whole(why)`` is raised) when more than ``most_refused`` of its
    records are refused, or when its first :data:`REFUSED_BEFORE_ANY_ANSWER` records are
    and the rest of it, asked at once, is refused too (a model that refuses everything).
    A request of ``n`` records with ``b`` refused costs at most about
    ``2 * b * log2(n)`` more calls of ``answer``.
    """
    parts: list[bytes] = []
    refused = 0
    answered = False

    def attempt(first: int, stop: int) -> None:
        nonlocal refused, answered
        try:
            part = answer(b"".join(records[first:stop]))
        except Exception as exc:
            reason = reason_of(exc)
            if reason is None:
                raise
            if stop - first > 1:
                middle = (first + stop) // 2
                attempt(first, middle)
                attempt(middle, stop)
                return
            refused += 1
            if refused > most_refused:
                raise refused_whole(
                    f"more than max_bad_records {most_refused} of its records refused"
                ) from None
            parts.append(marker_line(reason, records[first]))
            if not answered and refused >= REFUSED_BEFORE_ANY_ANSWER:
                rest_answered(first + 1)
            return
        answered = True
        parts.append(_ended(part))

    def rest_answered(first: int) -> None:
        """Ask the records from ``first`` on at once: all the rest when answered
        (:class:`_Answered`), else the request is refused whole."""
        why = f"its first {refused} records refused, none answered"
        if first == len(records):
            raise refused_whole(why)
        try:
            parts.append(_ended(answer(b"".join(records[first:]))))
        except Exception as exc:
            if reason_of(exc) is None:
                raise
            raise refused_whole(f"{why}, nor the rest of it") from None
        raise _Answered

    reason = reason_of(refusal)
    if reason is None or most_refused < 1 or not records:
        raise refusal
    if len(records) == 1:
        return marker_line(reason, records[0])
    middle = len(records) // 2
    try:
        attempt(0, middle)
        attempt(middle, len(records))
    except _Answered:
        pass
    return b"".join(parts)


class _Answered(Exception):
    """Every record of the request is answered or marked: the bisection ends."""


def _ended(part: bytes) -> bytes:
    """An answer ending its last line, as AssembleWith Line ends each answer."""
    return part if part.endswith(b"\n") or not part else part + b"\n"


def error_line(file: str, record: int, reason: str, input: str) -> bytes:
    """One line of an errors file: the record ``record`` (from 1) of ``file`` (text that
    is not valid Unicode, such as a lone surrogate in a reason, escaped)."""
    entry = {"file": file, "record": record, "reason": reason, "input": input}
    try:
        return json.dumps(entry, ensure_ascii=False).encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(entry).encode() + b"\n"


def renumbered(errors: bytes, file: str, before: int) -> bytes:
    """Errors-file lines of a part of ``file`` whose first record is its record
    ``before + 1``: named and numbered as records of ``file``."""
    lines = []
    for line in errors.splitlines():
        entry = json.loads(line)
        lines.append(error_line(file, before + entry["record"], entry["reason"], entry["input"]))
    return b"".join(lines)


@dataclass(frozen=True)
class SetAside:
    """What one answer held, marker lines taken out: the output, how many records of it
    were answered, and the errors-file lines of those set aside."""

    output: bytes
    answered: int
    errors: bytes
    count: int


class BadRecords:
    """One file's records set aside, as its answers come in order: at most ``most`` of
    them, and not :data:`REFUSED_BEFORE_ANY_ANSWER` before any record is answered; past
    either, the file fails (InputError naming ``name``)."""

    def __init__(self, name: str, most: int, *, answered: int = 0, count: int = 0) -> None:
        self.name, self.most = name, most
        self.count, self._answered = count, answered

    def take(self, output: bytes, first_record: int, records: int) -> SetAside:
        """``output`` (the assembled answer of ``records`` records numbered from
        ``first_record``, one line each) without its marker lines, and the errors lines
        they make."""
        if not has_marks(output):
            self._answered += records
            return SetAside(output, records, b"", 0)
        kept, errors = [], []
        for place, line in enumerate(output.split(b"\n")[:records]):
            if not line.startswith(MARKER):
                kept.append(line + b"\n")
                self._answered += 1
                continue
            record = first_record + place
            errors.append(error_line(self.name, record, **_mark(line, self.name, record)))
            self.count += 1
            self._check(record)
        return SetAside(b"".join(kept), records - len(errors), b"".join(errors), len(errors))

    def _check(self, record: int) -> None:
        if self.count > self.most:
            raise InputError(
                f"{self.name}: {self.count} records refused by record {record}, more than "
                f"max_bad_records {self.most}: the file fails; its records set aside are "
                "not written"
            )
        if not self._answered and self.count >= REFUSED_BEFORE_ANY_ANSWER:
            raise InputError(
                f"{self.name}: the model refused each of the first {self.count} records and "
                "answered none: the file fails (a model that refuses every record is not "
                "quarantined record by record)"
            )


def _mark(line: bytes, name: str, record: int) -> dict[str, str]:
    try:
        mark = json.loads(line[len(MARKER) :])
        return {"reason": str(mark["reason"]), "input": str(mark["input"])}
    except (ValueError, KeyError, TypeError):
        raise InputError(
            f"{name}: record {record}: the model server's answer holds a line starting with "
            "a NUL byte that is not a record set aside"
        ) from None
