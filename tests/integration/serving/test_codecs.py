"""Codecs without a server: exact output framing (one line per record, trailing newline, R13),
numbers written in shortest round-trip form, and Accept negotiation."""

import io
import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from batchinfer.media_types import DECODED_TYPES
from batchinfer.serving import codecs
from batchinfer.serving.server_errors import RequestError
from tests.integration.serving.helpers import npy_bytes

FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
MATRICES = hnp.arrays(np.float64, st.tuples(st.integers(1, 30), st.integers(1, 5)), elements=FINITE)


@settings(deadline=None, max_examples=60)
@given(MATRICES)
def test_csv_round_trip_is_exact_and_one_line_per_record(matrix):
    body = codecs.encode_csv(matrix)
    assert body.endswith(b"\n") and body.count(b"\n") == len(matrix)
    np.testing.assert_array_equal(codecs.decode_csv(body), matrix)


@settings(deadline=None, max_examples=60)
@given(MATRICES)
def test_jsonlines_and_json_encodings_are_valid_json(matrix):
    lines = codecs.encode_jsonlines(matrix).decode().split("\n")
    assert lines[-1] == "" and [json.loads(line) for line in lines[:-1]] == matrix.tolist()
    assert json.loads(codecs.encode_json(matrix)) == matrix.tolist()
    np.testing.assert_array_equal(codecs.decode_jsonlines(codecs.encode_jsonlines(matrix)), matrix)


LINES = st.lists(st.sampled_from([b"1,2\n", b"\n", b"3.5,x,y\n", b"7" * 40 + b"\n"]), max_size=40)


@settings(deadline=None, max_examples=200)
@given(LINES, st.binary(max_size=3).filter(lambda tail: b"\n" not in tail), st.integers(1, 9),
       st.integers(1, 64), st.lists(st.integers(0, 40), max_size=6))  # fmt: skip
def test_line_runs_cut_a_body_into_runs_of_whole_lines(lines, tail, size, scan, cuts):
    """Runs of ``size`` lines, the last as the body ends, whatever the scanning block and
    wherever the body's parts (as read) end: within a line, at its end, empty parts."""
    body = b"".join(lines) + tail
    ends = sorted({min(cut, len(body)) for cut in cuts})
    parts = [body[a:b] for a, b in zip([0, *ends], [*ends, len(body)], strict=True)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codecs, "_SCAN", scan)
        runs = list(codecs.line_runs(parts, size))
        assert runs == list(codecs.line_runs([body], size))
    assert b"".join(runs) == body
    assert all(run.count(b"\n") == size for run in runs[:-1])
    if runs:
        last = runs[-1]
        assert 1 <= last.count(b"\n") + (not last.endswith(b"\n")) <= size


def test_encodings_of_labels_probabilities_and_other_values():
    assert codecs.encode_csv(np.array([1, 0, 1])) == b"1\n0\n1\n"
    assert codecs.encode_csv(np.array([0.25, 1.0])) == b"0.25\n1\n"
    assert codecs.encode_csv(np.array([[0.1, 0.9]])) == b"0.1,0.9\n"
    assert codecs.encode_csv(np.array(["yes", 'a "b", c'])) == b'yes\n"a ""b"", c"\n'
    assert codecs.encode_csv(np.array([], dtype=np.int64)) == b""
    assert codecs.encode_jsonlines(np.array([[1, 2], [3, 4]])) == b"[1,2]\n[3,4]\n"
    assert codecs.encode_jsonlines(np.array([np.nan, 1.0])) == b"NaN\n1.0\n"
    assert codecs.encode_jsonlines([{"label": "a"}, {"label": "b"}]) == (
        b'{"label": "a"}\n{"label": "b"}\n'
    )
    assert codecs.encode_json(np.array([True, False])) == b"[true,false]"
    assert codecs.encode_json(np.array([], dtype=np.int64)) == b"[]"
    assert np.load(io.BytesIO(codecs.encode_npy([1.5, 2.5]))).tolist() == [1.5, 2.5]


def test_decoders_shape_records():
    np.testing.assert_array_equal(codecs.decode_csv(b"1\n2\n"), [[1.0], [2.0]])
    np.testing.assert_array_equal(codecs.decode_csv(b"1,,3\n"), [[1.0, np.nan, 3.0]])
    np.testing.assert_array_equal(codecs.decode_csv(b'"1",2\r\n3,4'), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(codecs.decode_jsonlines(b"1\n2\n"), [[1.0], [2.0]])
    np.testing.assert_array_equal(codecs.decode_json(b"[1, null]"), [[1.0], [np.nan]])
    stream = io.BytesIO()
    np.save(stream, np.arange(3))
    assert codecs.decode_npy(stream.getvalue()).shape == (3, 1)


def test_csv_type_is_decided_per_file_not_per_block():
    """Integers for megabytes, then a decimal: still one float column, no error."""
    body = b"1,2\n" * 600_000 + b"1.5,2\n"
    matrix = codecs.decode_csv(body)
    assert matrix.shape == (600_001, 2) and matrix[-1, 0] == 1.5


@pytest.mark.parametrize(
    ("accept", "supported", "chosen"),
    [
        (None, frozenset(codecs.ENCODERS), "text/csv"),
        ("*/*", frozenset(codecs.ENCODERS), "text/csv"),
        ("application/json; q=0.9, text/csv", frozenset(codecs.ENCODERS), "application/json"),
        ("application/x-yaml, */*", frozenset(codecs.ENCODERS), "text/csv"),
        ("application/JSONL", frozenset(codecs.ENCODERS), "application/jsonlines"),
        ("text/x-anything", None, "text/x-anything"),
    ],
)
def test_accept_negotiation(accept, supported, chosen):
    assert codecs.negotiate(accept, "text/csv", supported) == chosen


def test_unsupported_accept_is_406():
    with pytest.raises(RequestError) as refused:
        codecs.negotiate("application/x-yaml", "text/csv", frozenset(codecs.ENCODERS))
    assert refused.value.status == 406


def test_nan_and_infinity_are_read_as_sagemakers_containers_read_them():
    """Missing values are NaN and infinities infinite (np.genfromtxt and json.loads read them
    so); a decimal beyond float64 is infinite, as float() reads it. The model decides."""
    nan, inf = np.nan, np.inf
    expected = [[nan, inf, -inf, nan, inf]]
    np.testing.assert_array_equal(codecs.decode_csv(b"nan,inf,-Infinity,,1e999\n"), expected)
    np.testing.assert_array_equal(
        codecs.decode_jsonlines(b"[NaN, Infinity, -Infinity, null, 1e999]\n"), expected
    )
    np.testing.assert_array_equal(
        codecs.decode_json(b'{"instances": [[NaN, Infinity, -Infinity, null, 1e999]]}'), expected
    )


# Characters of numbers, of Arrow's null spellings, and of near misses; no CSV syntax.
FIELD_CHARS = st.sampled_from(list("0123456789.eE+- \tinfatyNAIFul/#_x\u0661\x0b"))


@settings(max_examples=300)
@given(st.text(FIELD_CHARS, max_size=8))
def test_the_slow_path_reads_a_field_as_arrow_does(field):
    """The loop that names a malformed field agrees with Arrow's fast path on what a number
    is, so it always names a field rather than the whole body."""
    try:
        codecs.decode_csv(f"1,{field}\n".encode())
    except RequestError:
        arrow_reads_it = False
    else:
        arrow_reads_it = True
    with pytest.raises(RequestError) as refused:
        codecs.decode_csv(f"1,{field},x\n".encode())
    named = "field 3" if arrow_reads_it else "field 2"
    assert refused.value.message.startswith(f"text/csv record 1, {named}:")


def test_npy_bodies_are_read_as_np_load_reads_them():
    matrix = np.arange(12, dtype=">i4").reshape(3, 4)
    for array in (matrix, np.asfortranarray(matrix), matrix.astype(np.float32), matrix > 5):
        decoded = codecs.decode_npy(npy_bytes(array))
        np.testing.assert_array_equal(decoded, array)
        assert decoded.flags.writeable
    np.testing.assert_array_equal(codecs.decode_npy(npy_bytes(np.arange(3.0))), [[0], [1], [2]])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (npy_bytes(np.arange(4.0)) + b"\0" * 8, "holds 40 bytes of data, its header's shape (4,)"),
        (npy_bytes(np.arange(4.0))[:-1], "holds 31 bytes of data"),
        (npy_bytes(np.array(["a", "b"])), "holds <U1 values, not numbers"),
        (npy_bytes(np.array([1 + 2j])), "holds complex128 values, not numbers"),
        (npy_bytes(np.zeros((0, 3))), "holds no record"),
        (npy_bytes(np.float64(1.0)), "holds no record"),
        (b"\x93NUMPY\x03\x00" + bytes(20), "version 3.0 is not supported"),
        (b"PK\x03\x04" + bytes(20), "not a .npy array"),
    ],
)
def test_malformed_npy_bodies_are_refused_naming_the_body(body, message):
    with pytest.raises(RequestError) as refused:
        codecs.decode_npy(body)
    assert refused.value.status == 400
    assert refused.value.message.startswith("application/x-npy body")
    assert message in refused.value.message


def test_the_types_checked_before_a_run_are_the_ones_the_default_handler_decodes():
    """The engine refuses an undecodable content type before any server starts, from
    media_types.DECODED_TYPES, without importing the codecs (NumPy, Arrow)."""
    assert set(codecs.DECODERS) == DECODED_TYPES


def test_the_local_engine_loads_neither_numpy_nor_arrow():
    """`batchinfer run` starts its servers sooner for not importing the model's libraries:
    only the servers need them."""
    code = (
        "import sys, batchinfer.commands.run, batchinfer.engine.transform_engine; "
        "print(sorted(m for m in ('numpy', 'pyarrow', 'sklearn') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_numeric_csv_is_decoded_and_encoded_without_pandas():
    """A model server worker answering numeric CSV never imports pandas (Arrow's
    ``to_numpy`` and ``pa.array`` would): about 0.6 s of each worker's first request, and
    its memory ever after, for a model that does not use it."""
    code = (
        "import sys; from batchinfer.serving import codecs; "
        "rows = codecs.decode_csv(b'1,2.5,\\n-3,nan,4e3\\n'); codecs.encode_csv(rows); "
        "codecs.encode_csv(rows > 1); codecs.encode_csv(rows.astype('int32')); "
        "print('pandas' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


NUMERIC_DTYPES = st.sampled_from(["?", "i1", "i2", "i4", "i8", "u1", "u8", "f2", "f4", "f8"])


@settings(deadline=None, max_examples=80)
@given(NUMERIC_DTYPES.flatmap(
    lambda dtype: hnp.arrays(dtype, st.tuples(st.integers(1, 40), st.integers(1, 3)))
), st.booleans())  # fmt: skip
def test_csv_lines_are_arrows_own_writing_of_each_numpy_type(matrix, strided):
    """Columns handed to Arrow from their buffers (strided views too) are written as
    ``pa.array`` would have them written."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    columns = matrix[::2] if strided and len(matrix) > 1 else matrix
    table = pa.table([pa.array(columns[:, j]) for j in range(columns.shape[1])],
                     names=[f"f{j}" for j in range(columns.shape[1])])  # fmt: skip
    sink = pa.BufferOutputStream()
    pacsv.write_csv(table, sink, pacsv.WriteOptions(include_header=False, quoting_style="none"))
    assert codecs.encode_csv(columns) == sink.getvalue().to_pybytes()


def test_missing_values_are_nan_in_every_block_of_a_large_body():
    """Arrow reads a body over a MiB in blocks (chunks of its columns): each block's missing
    values land as NaN where they stand."""
    rows = np.random.default_rng(3).normal(size=(60_000, 3))
    rows[::7, 1] = np.nan
    body = codecs.encode_csv(rows).replace(b"nan", b"")
    assert len(body) > 2 * 1024 * 1024
    np.testing.assert_array_equal(codecs.decode_csv(body), rows)


def _parquet(table) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_a_parquet_body_is_read_in_column_order_as_numbers_for_an_array_model():
    import pyarrow as pa

    table = pa.table({"b": [1.5, None], "a": pa.array([3, 4], pa.int8()), "f": [True, False]})
    decoded = codecs.decode(_parquet(table), "application/x-parquet")
    np.testing.assert_array_equal(decoded, [[1.5, 3, 1], [np.nan, 4, 0]])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"1,2\n", "application/x-parquet body is not a readable Parquet file: "),
        ("text", "application/x-parquet column 'city' holds string values, not numbers: a "
                 "model fitted on an array takes numbers only; text or categorical columns "
                 "need a model fitted on a DataFrame (given the columns by name)"),
        ("empty", "application/x-parquet body holds no record"),
    ],
)  # fmt: skip
def test_a_parquet_body_an_array_model_cannot_read_is_a_400_saying_why(body, message):
    import pyarrow as pa

    if body == "text":
        body = _parquet(pa.table({"age": [1], "city": ["Lyon"]}))
    elif body == "empty":
        body = _parquet(pa.table({"age": pa.array([], pa.int64())}))
    with pytest.raises(RequestError) as refused:
        codecs.decode(body, "application/x-parquet")
    assert refused.value.status == 400
    assert str(refused.value).startswith(message)


def test_predictions_are_written_as_parquet_columns_named_for_what_they_hold():
    import pandas as pd

    def read(prediction) -> "pd.DataFrame":
        return pd.read_parquet(io.BytesIO(codecs.encode(prediction, "application/x-parquet")))

    assert read(np.array([0.25, 1.0])).to_dict("list") == {"prediction": [0.25, 1.0]}
    assert read(np.array([[0.1, 0.9]])).to_dict("list") == {
        "prediction_0": [0.1],
        "prediction_1": [0.9],
    }
    assert read(np.array(["yes", "no"], dtype=object)).to_dict("list") == {
        "prediction": ["yes", "no"]
    }
    assert read(pd.Series([1, 2], name="score")).to_dict("list") == {"score": [1, 2]}
    assert read(pd.DataFrame({"label": ["a"], "p": [0.5]})).to_dict("list") == {
        "label": ["a"],
        "p": [0.5],
    }
    assert read(np.array([True, False]))["prediction"].dtype == bool
