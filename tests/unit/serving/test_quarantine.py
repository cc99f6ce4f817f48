"""The model server's bisection of a refused request: every record it takes answered as one
request answers it, every refused record named once, in order, within the bound on passes;
a request refused throughout, or past the file's allowance, refused whole."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchinfer.serving.quarantine import REFUSED_BEFORE_ANY_ANSWER, Refused, answer_apart
from batchinfer.serving.server_errors import RequestError


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
                raise RequestError(400, f"record {int(line)}: not a number")
        return b"".join(b"%d\n" % (2 * int(line)) for line in lines)


def records(count: int) -> list[bytes]:
    return [b"%d\n" % n for n in range(count)]


@settings(deadline=None, max_examples=200)
@given(st.data())
def test_the_records_taken_are_answered_in_order_and_each_refused_one_named(data):
    count = data.draw(st.integers(2, 600), label="records")
    bad = data.draw(st.sets(st.integers(0, count - 1), min_size=1, max_size=8), label="bad")
    handler = Handler(bad)
    refusal = RequestError(400, "the whole request")
    try:
        parts = answer_apart(handler, records(count), refusal, most_refused=8)
    except RequestError as exc:  # only when no record could be answered first
        assert exc is refusal
        assert len(bad) >= min(count, REFUSED_BEFORE_ANY_ANSWER) or len(bad) == count
        return
    answered = b"".join(p for p in parts if isinstance(p, bytes))
    assert answered == b"".join(b"%d\n" % (2 * n) for n in range(count) if n not in bad)
    named = [p for p in parts if isinstance(p, Refused)]
    assert [p.record for p in named] == sorted(bad)
    assert all(p.reason == f"record {p.record}: not a number" for p in named)
    # each refused record costs at most two passes at each level of the halving
    assert handler.passes <= 2 * len(bad) * math.ceil(math.log2(count)) + 1


def test_three_bad_records_among_ten_thousand_take_few_passes():
    handler = Handler({17, 5_000, 9_998})
    parts = answer_apart(handler, records(10_000), RequestError(400, "x"), most_refused=3)
    assert [p.record for p in parts if isinstance(p, Refused)] == [17, 5_000, 9_998]
    assert handler.passes <= 2 * 3 * 14  # 14 halvings of 10,000
    print(f"3 bad of 10,000: {handler.passes} passes")


@pytest.mark.parametrize(
    ("count", "bad", "most_refused", "passes_at_most"),
    [
        (1_000, set(range(1_000)), 1_000, 2 * 16 * 10),  # refuses everything: stops early
        (1_000, {3, 400, 800}, 2, 2 * 3 * 10),  # past the allowance
        (1, {0}, 5, 0),  # one record: nothing to tell apart
    ],
    ids=["everything refused", "past the allowance", "one record"],
)
def test_a_request_refused_throughout_or_past_the_allowance_is_refused_whole(
    count, bad, most_refused, passes_at_most
):
    handler = Handler(bad)
    refusal = RequestError(400, "the whole request")
    with pytest.raises(RequestError) as raised:
        answer_apart(handler, records(count), refusal, most_refused=most_refused)
    assert raised.value is refusal
    assert handler.passes <= passes_at_most


def test_an_error_that_is_the_models_is_not_quarantined():
    """A 500 (any exception but a refusal) is the platform's to retry: it is raised as is."""

    def broken(body: bytes) -> bytes:
        raise MemoryError("the model ran out")

    with pytest.raises(MemoryError):
        answer_apart(broken, records(10), RequestError(400, "x"), most_refused=5)


def test_a_handler_with_an_allowance_answers_a_csv_request_with_a_marker_per_bad_record(
    tmp_path,
):
    """BATCHINFER_MAX_BAD_RECORDS on: the row-sum model refuses a request holding 'bad';
    the handler answers the other records as one request would, a marker line in place of
    each bad one; without it, the request is refused whole (the platform's rule)."""
    from batchinfer.serving.handlers import load_handler
    from batchinfer.serving.quarantine import MARKER
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
    marked = [(n, line) for n, line in enumerate(lines) if line.startswith(MARKER)]
    assert [n for n, _ in marked] == [1, 4]  # in the refused records' places
    assert all(b"row holds 'bad'" in line for _, line in marked)
    stricter = load_handler(model, {"BATCHINFER_MAX_BAD_RECORDS": "1"})
    with pytest.raises(RequestError):
        stricter.invoke(body, "text/csv", "text/csv")  # two bad records, one allowed
