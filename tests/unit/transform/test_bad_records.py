"""Records set aside (bad_records quarantine): the model server's bisection of a refused
request (every record it takes answered as one request answers it, every refused record
marked once, in its place, within the bound on passes; a request refused throughout, or
past the allowance, refused whole), and an engine's reading of the marks into the errors
file."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchinfer.errors import InputError
from batchinfer.serving.server_errors import RequestError
from batchinfer.transform.bad_records import (
    MARKER,
    REFUSED_BEFORE_ANY_ANSWER,
    BadRecords,
    answer_apart,
    error_line,
    lines_of,
    marker_line,
    renumbered,
)


class Handler:
    """Answers each line with its number doubled; refuses a request holding a bad line,
    naming the first, as the default CSV decoder names a record it cannot read."""

    def __init__(self, bad: set[int]) -> None:
        self.bad = bad
        self.passes = 0

    def __call__(self, body: bytes) -> bytes:
        self.passes += 1
        lines = body.splitlines(keepends=True)
        for line in lines:
            if int(line) in self.bad:
                raise RequestError(400, f"{int(line)} is not a number")
        return b"".join(b"%d\n" % (2 * int(line)) for line in lines)


def records(count: int) -> list[bytes]:
    return [b"%d\n" % n for n in range(count)]


def reason_of(exc: Exception) -> str | None:
    return exc.message if isinstance(exc, RequestError) and exc.status == 400 else None


def apart(handler, count: int, most: int, refusal=None) -> bytes:
    refusal = refusal or RequestError(400, "the whole request")
    return answer_apart(
        handler,
        records(count),
        refusal,
        most_refused=most,
        reason_of=reason_of,
        refused_whole=lambda why: RequestError(400, f"whole: {why}"),
    )


def marked(answer: bytes) -> list[tuple[int, dict]]:
    return [
        (place, json.loads(line[1:]))
        for place, line in enumerate(answer.splitlines())
        if line.startswith(MARKER)
    ]


@settings(deadline=None, max_examples=200)
@given(st.data())
def test_the_records_taken_are_answered_in_order_and_each_refused_one_marked_in_place(data):
    count = data.draw(st.integers(2, 600), label="records")
    bad = data.draw(st.sets(st.integers(0, count - 1), min_size=1, max_size=8), label="bad")
    handler = Handler(bad)
    answer = apart(handler, count, 8)  # never refused whole: 8 at most, fewer than 16
    lines = answer.splitlines(keepends=True)
    assert len(lines) == count  # one line per record, in its place
    assert [line for n, line in enumerate(lines) if n not in bad] == [
        b"%d\n" % (2 * n) for n in range(count) if n not in bad
    ]
    assert [(place, mark) for place, mark in marked(answer)] == [
        (n, {"reason": f"{n} is not a number", "input": str(n)}) for n in sorted(bad)
    ]
    # each refused record costs at most two passes at each level of the halving
    assert handler.passes <= 2 * len(bad) * math.ceil(math.log2(count))


def test_three_bad_records_among_ten_thousand_take_few_passes():
    handler = Handler({17, 5_000, 9_998})
    answer = apart(handler, 10_000, 3)
    assert [place for place, _ in marked(answer)] == [17, 5_000, 9_998]
    assert handler.passes <= 2 * 3 * 14  # 14 halvings of 10,000
    print(f"3 bad of 10,000: {handler.passes} passes")


@pytest.mark.parametrize(
    ("count", "bad", "most_refused", "passes_at_most", "why"),
    [
        (1_000, set(range(1_000)), 1_000, 2 * 16 * 10, "its first 16 records refused"),
        (1_000, {3, 400, 800}, 2, 2 * 3 * 10, "more than max_bad_records 2"),
    ],
    ids=["everything refused", "past the allowance"],
)
def test_a_request_refused_throughout_or_past_the_allowance_is_refused_whole(
    count, bad, most_refused, passes_at_most, why
):
    handler = Handler(bad)
    with pytest.raises(RequestError, match=f"whole: {why}"):
        apart(handler, count, most_refused)
    assert handler.passes <= passes_at_most


def test_one_record_refused_is_marked_without_another_pass():
    """SingleRecord: the request is the record, set aside at once."""
    handler = Handler({0})
    answer = apart(handler, 1, 1, refusal=RequestError(400, "0 is not a number"))
    assert answer == marker_line("0 is not a number", b"0\n")
    assert handler.passes == 0


def test_an_error_that_is_the_models_or_an_allowance_of_none_is_not_quarantined():
    """A 500 (any exception but a refusal) is the platform's to retry: raised as it is; and
    with no record allowed aside, the refusal stands."""

    def broken(body: bytes) -> bytes:
        raise MemoryError("the model ran out")

    with pytest.raises(MemoryError):
        apart(broken, 10, 5)
    refusal = RequestError(400, "x")
    with pytest.raises(RequestError) as raised:
        apart(Handler({3}), 10, 0, refusal=refusal)
    assert raised.value is refusal
    unavailable = RequestError(415, "not CSV")
    with pytest.raises(RequestError) as raised:
        apart(Handler({3}), 10, 5, refusal=unavailable)
    assert raised.value is unavailable


def test_lines_keep_their_ends_and_only_newline_ends_a_line():
    assert lines_of(b"a\r\nb\rc\nd") == [b"a\r\n", b"b\rc\n", b"d"]
    assert lines_of(b"a\n") == [b"a\n"]
    assert lines_of(b"") == []


def test_marked_answer_lines_become_errors_lines_numbered_in_the_file():
    bad = BadRecords("in/data.csv", 5)
    answer = b"2\n" + marker_line("no", b"x,y\n") + b"6\n"
    taken = bad.take(answer, first_record=101, records=3)
    assert taken.output == b"2\n6\n" and taken.answered == 2 and taken.count == 1
    assert json.loads(taken.errors) == {
        "file": "in/data.csv",
        "record": 102,
        "reason": "no",
        "input": "x,y",
    }
    plain = bad.take(b"1\n2\n", first_record=104, records=2)
    assert plain.output == b"1\n2\n" and plain.errors == b"" and bad.count == 1


def test_a_file_fails_past_its_allowance_or_when_every_record_so_far_is_refused():
    bad = BadRecords("a.csv", 2)
    bad.take(marker_line("no", b"1\n") + b"ok\n", 1, 2)
    with pytest.raises(InputError, match=r"a\.csv: 3 records refused by record 4, more than "):
        bad.take(marker_line("no", b"3\n") + marker_line("no", b"4\n"), 3, 2)
    refusing = BadRecords("b.csv", 1_000)
    every = b"".join(marker_line("no", b"%d\n" % n) for n in range(REFUSED_BEFORE_ANY_ANSWER))
    with pytest.raises(InputError, match=r"b\.csv: the model refused each of the first 16"):
        refusing.take(every, 1, REFUSED_BEFORE_ANY_ANSWER)


def test_a_nul_line_that_is_no_mark_is_named():
    with pytest.raises(InputError, match=r"a\.csv: record 2: .* NUL byte"):
        BadRecords("a.csv", 5).take(b"1\n\x00garbage\n", 1, 2)


def test_a_parts_errors_are_renumbered_as_records_of_the_whole_file():
    part = BadRecords("a.csv.part-2", 5).take(marker_line("no", b"z\n"), 3, 1).errors
    assert json.loads(renumbered(part, "a.csv", 1_000)) == {
        "file": "a.csv",
        "record": 1_003,
        "reason": "no",
        "input": "z",
    }


def test_a_handler_with_an_allowance_answers_a_csv_request_with_a_marker_per_bad_record(
    tmp_path,
):
    """BATCHINFER_MAX_BAD_RECORDS on: the row-sum model refuses a request holding 'bad';
    the handler answers the other records as one request would, a marker line in place of
    each bad one; without it, the request is refused whole (the platform's rule)."""
    from batchinfer.serving.handlers import load_handler
    from tests.support.models import write_row_sum_model

    model = write_row_sum_model(tmp_path / "model")
    body = b"1,2\n3,bad\n4,5\n6,7\nbad,1\n"
    strict = load_handler(model, {})
    with pytest.raises(RequestError):
        strict.invoke(body, "text/csv", "text/csv")
    lenient = load_handler(model, {"BATCHINFER_MAX_BAD_RECORDS": "2"})
    answer, answer_type = lenient.invoke(body, "text/csv", "text/csv")
    lines = answer.splitlines()
    assert answer_type == "text/csv"
    assert [line for line in lines if not line.startswith(MARKER)] == [
        strict.invoke(row, "text/csv", "text/csv")[0].strip()
        for row in (b"1,2\n", b"4,5\n", b"6,7\n")
    ]
    assert [place for place, _ in marked(answer)] == [1, 4]  # in the refused records' places
    assert [mark["input"] for _, mark in marked(answer)] == ["3,bad", "bad,1"]
    assert all("row holds 'bad'" in mark["reason"] for _, mark in marked(answer))
    stricter = load_handler(model, {"BATCHINFER_MAX_BAD_RECORDS": "1"})
    with pytest.raises(RequestError, match="more than max_bad_records 1"):
        stricter.invoke(body, "text/csv", "text/csv")  # two bad records, one allowed


def test_a_request_whose_first_records_are_refused_is_still_told_apart_when_the_rest_is_good():
    """16 refused before any answered: the rest is asked at once, answered, and the request
    is told apart (the first 16 set aside) instead of refused as a model that refuses
    everything."""
    handler = Handler(set(range(16)))
    answer = apart(handler, 1_000, 100)
    assert [place for place, _ in marked(answer)] == list(range(16))
    assert answer.splitlines()[16:] == [b"%d" % (2 * n) for n in range(16, 1_000)]
    assert handler.passes <= 2 * 16 * 10 + 1
    with pytest.raises(RequestError, match="none answered, nor the rest of it"):
        apart(Handler({*range(16), 500}), 1_000, 100)  # one more bad record in the rest


def test_an_empty_request_refused_stays_refused():
    refusal = RequestError(400, "empty")
    with pytest.raises(RequestError) as raised:
        answer_apart(
            Handler(set()),
            [],
            refusal,
            most_refused=5,
            reason_of=reason_of,
            refused_whole=lambda why: RequestError(400, why),
        )
    assert raised.value is refusal


def test_an_errors_line_escapes_text_that_is_not_unicode():
    line = json.loads(error_line("a.csv", 1, "bad \ud800 byte", "x"))
    assert line["reason"] == "bad \ud800 byte"
