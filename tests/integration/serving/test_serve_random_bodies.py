"""Random and near-miss bodies against one real server (C3): every answer is 200 or a 400
naming the record at fault or the body, and the worker outlives them all.

Each content type gets random bytes, random text and structured near misses: CSV rows of
random fields (numbers, NaN and Infinity spellings, huge numbers, stray quotes and carriage
returns), JSON of random values (huge integers, NaN, Infinity, objects, deep nesting) and
.npy arrays of random dtypes, cut short, padded or with a header that lies. The examples
and their number come from the Hypothesis profile of tests/conftest.py.
"""

import json
import re
from collections.abc import Iterator

import joblib
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.linear_model import LinearRegression

from batchinfer.media_types import CSV, JSON, JSONLINES, NPY
from batchinfer.serving.launcher import ServerProcess, start_server
from tests.integration.serving.helpers import START_TIMEOUT, Client, csv_body, npy_bytes

FEATURES = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0], [2.0, 0.0, -3.5], [7.0, 1.5, 0.25]])
_BOOTED = re.compile(r"Booting worker with pid: (\d+)")

# --- bodies ----------------------------------------------------------------------------------

HUGE_INTEGERS = st.integers(-(10**400), 10**400)
NUMBERS = st.one_of(st.floats(), HUGE_INTEGERS, st.integers(-9, 9), st.booleans(), st.none())
# Spellings Arrow reads as numbers or missing values, and near misses it does not.
SPELLINGS = ["", "nan", "NaN", "-inf", "Infinity", "1e999", "NA", "null", "1_0", "0x1F", " 1 "]
BROKEN = ['"1"', '"', '"1"x', "\r", "a", "\u0661", "\x00", "\ufeff1", ",", "\\"]
CSV_FIELDS = st.one_of(
    st.floats().map(repr),
    HUGE_INTEGERS.map(str),
    st.sampled_from(SPELLINGS),
    st.sampled_from(BROKEN),
    st.text(max_size=4),
)
LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r", "\n\n", ""])


@st.composite
def csv_rows(draw: st.DrawFn) -> str:
    """Rows of one width (sometimes the model's three features), one ragged now and then."""
    width = draw(st.integers(1, 4))
    rows = st.lists(CSV_FIELDS, min_size=width, max_size=width) | st.lists(CSV_FIELDS, max_size=5)
    lines = draw(st.lists(st.tuples(rows.map(",".join), LINE_ENDS), min_size=1, max_size=5))
    return "".join(row + end for row, end in lines)


JSON_VALUES = st.recursive(
    NUMBERS | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=8,
)
RECORDS = st.lists(NUMBERS, min_size=3, max_size=3) | NUMBERS | JSON_VALUES
DEEP = st.integers(1, 5000).map(lambda depth: "[" * depth + "1" + "]" * depth)
JSON_TEXTS = st.one_of(
    st.lists(RECORDS, max_size=5).map(json.dumps),
    st.lists(RECORDS, max_size=5).map(lambda records: json.dumps({"instances": records})),
    JSON_VALUES.map(json.dumps),
    DEEP,
)
JSONLINES_TEXTS = st.lists(
    st.one_of(RECORDS.map(json.dumps), DEEP, st.just(""), st.text(max_size=5)), min_size=1
).flatmap(lambda lines: st.sampled_from(["\n", ""]).map(lambda end: "\n".join(lines) + end))

NPY_ARRAYS = hnp.arrays(
    hnp.scalar_dtypes(), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
).map(npy_bytes)


def _tampered(body: bytes) -> st.SearchStrategy[bytes]:
    """The body as it is, cut short, padded, with bytes of its header overwritten, or with a
    header that claims a huge shape."""
    return st.one_of(
        st.just(body),
        st.integers(0, len(body)).map(lambda n: body[:n]),
        st.binary(min_size=1, max_size=16).map(lambda extra: body + extra),
        st.tuples(st.integers(6, 64), st.sampled_from([b'"""', b"'", b"(", b"{", b"\xff"])).map(
            lambda spot: body[: spot[0]] + spot[1] + body[spot[0] + len(spot[1]) :]
        ),
        st.just(body.replace(b"'shape': (", b"'shape': (99999999999, ", 1)),
    )


NEAR_MISSES = {
    CSV: csv_rows().map(str.encode),
    JSONLINES: JSONLINES_TEXTS.map(str.encode),
    JSON: JSON_TEXTS.map(str.encode),
    NPY: NPY_ARRAYS.flatmap(_tampered),
}


def bodies(content_type: str) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=300), st.text(max_size=200).map(str.encode), NEAR_MISSES[content_type]
    )


def refusal(content_type: str) -> re.Pattern[str]:
    """The shapes of a 400: the codecs name the record (or its field or value) at fault or
    the body; the handler names the request when the model refuses its records."""
    return re.compile(
        rf"{re.escape(content_type)} (record \d+\b|body\b)"
        r"|records have \d+ values each but the model expects 3 features$"
        r"|the model's predict rejected the request: "
    )


def records_in(body: bytes) -> int:
    """Records of a body as SplitType Line frames them: lines, the last one maybe unended."""
    return body.count(b"\n") + (not body.endswith(b"\n"))


# --- the server ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def linear_model() -> LinearRegression:
    return LinearRegression().fit(FEATURES, FEATURES @ [1.0, -2.0, 0.5] + 3.0)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, linear_model: LinearRegression
) -> Iterator[ServerProcess]:
    """One server, one worker, a three-feature linear model: small and quick to answer."""
    model_dir = tmp_path_factory.mktemp("linear-model")
    joblib.dump(linear_model, model_dir / "model.joblib")
    with start_server(model_dir, workers=1) as process:
        process.wait_healthy(START_TIMEOUT)
        yield process


def booted_workers(server: ServerProcess) -> list[str]:
    """The pids of the workers gunicorn has booted, in order; a restart adds one."""
    return _BOOTED.findall(server.log_text())


@pytest.mark.parametrize("content_type", [CSV, JSONLINES, JSON, NPY])
def test_every_body_gets_200_or_a_400_naming_a_record_and_the_worker_lives_c3(
    server, linear_model, content_type
):
    client = Client(server.port)
    workers = booted_workers(server)
    assert len(workers) == 1
    shape = refusal(content_type)

    @given(bodies(content_type))
    def answered(body: bytes) -> None:
        reply = client.invoke(body, content_type)
        assert reply.status in (200, 400), reply.text
        if reply.status == 400:
            assert shape.match(reply.text), reply.text
        elif content_type in (CSV, JSONLINES):  # one output line per record (R13)
            assert reply.body.count(b"\n") == records_in(body)

    answered()
    assert client.call("GET", "/ping").status == 200
    reply = client.invoke(csv_body(FEATURES), CSV)
    assert reply.status == 200
    predictions = np.loadtxt(reply.body.decode().splitlines())
    np.testing.assert_allclose(predictions, linear_model.predict(FEATURES), rtol=1e-12)
    assert booted_workers(server) == workers, server.log_text()[-2000:]
