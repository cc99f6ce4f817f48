"""Errors a user can act on, from the real server: 400 naming the record, 406, 413, 415, 404/405,
a model that cannot load (never healthy, the log says why), and a server that outlives them."""

import gzip
import http.client
import io
import json

import numpy as np
import pytest

from batchinfer.serving.launcher import start_server
from batchinfer.serving.server_errors import ServerStartError

ROW = b"59,2,32.1,101,157,93.2,38,4,4.8598,87\n"


def _npy_header(shape: tuple[int, ...]) -> bytes:
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        stream, {"descr": "<f8", "fortran_order": False, "shape": shape}
    )
    return stream.getvalue()


# Claims 10**11 x 10 float64s (8 TB) and holds one: refused before anything is allocated.
NPY_HEADER_OF_A_TERABYTE = _npy_header((10**11, 10)) + bytes(8)


@pytest.mark.parametrize(
    ("body", "content_type", "fragments"),
    [
        (ROW + b"1,2,x,4,5,6,7,8,9,10\n", "text/csv", ["record 2, field 3", "'x' is not a number"]),
        (ROW * 2 + b"1,2,3\n", "text/csv", ["record 3 has 3 fields, record 1 has 10"]),
        (ROW + b"\n" + ROW, "text/csv", ["record 2 is empty"]),
        (b"age,sex,bmi,bp,s1,s2,s3,s4,s5,s6\n" + ROW, "text/csv", ["record 1, field 1", "header"]),
        (ROW + b"1,2,\xff,4,5,6,7,8,9,10\n", "text/csv", ["record 2 is not UTF-8"]),
        (b"", "text/csv", ["empty"]),
        (b"[1,2]\n[1,2\n", "application/jsonlines", ["record 2 is not one JSON value"]),
        (b"[1,2]\n[1,2],[3,4]\n", "application/jsonlines", ["record 2 is not one JSON value"]),
        (b'[1,2]\n[1,"a"]\n', "application/jsonlines", ['record 2, value 2: "a" is not a number']),
        (b"[1,2]\n[1,2,3]\n", "application/jsonlines", ["record 2 has 3 values, record 1 has 2"]),
        (b'{"instances": [[1,2],[3,{}]]}', "application/json", ["record 2, value 2"]),
        (b'{"rows": [[1,2]]}', "application/json", ['"instances"']),
        (b"[[1,2]", "application/json", ["not valid JSON"]),
        (b"\x93NUMPY garbage", "application/x-npy", ["not a .npy array"]),
        (b"1,2,3\n", "text/csv", ["records have 3 values each but the model expects 10"]),
        # Faults that once escaped the decoders as 500s (C3: a bad request is the client's).
        (ROW + b"1,2,3\r4,5,6,7,8,9,10\n", "text/csv", ["record 2 holds a carriage return"]),
        (gzip.compress(ROW, mtime=0), "text/csv", ["text/csv body is gzip-compressed"]),
        (gzip.compress(b"[[1,2]]", mtime=0), "application/json", ["application/json body is gzip"]),
        (b"[1,2]\n[1,1" + b"0" * 400 + b"]\n", "application/jsonlines", ["record 2, value 2"]),
        (b"[1, 2" + b"0" * 400 + b"]", "application/json", ["beyond the float64 range"]),
        (b"[" * 5000 + b"]" * 5000, "application/json", ["body is not valid JSON", "recursion"]),
        (b"1\n" + b"[" * 5000 + b"]" * 5000, "application/jsonlines", ["record 2 is not one"]),
        (b"[1,2]\n\xff\xfe\n", "application/jsonlines", ["record 2 is not UTF-8 text"]),
        (b"[1,2]\n\n[3,4]\n", "application/jsonlines", ["record 2 is empty"]),
        (b"1\n[2]\n", "application/jsonlines", ["record 2 has 1 value, record 1 is a single"]),
        (b"PK\x03\x04" + bytes(40), "application/x-npy", ["not a .npy array"]),
        (NPY_HEADER_OF_A_TERABYTE, "application/x-npy", ["holds 8 bytes of data", "needs 8"]),
    ],
)
def test_malformed_records_get_400_naming_the_record(example_server, body, content_type, fragments):
    reply = example_server.invoke(body, content_type)
    assert reply.status == 400, reply.text
    for fragment in fragments:
        assert fragment in reply.text


def test_unsupported_content_type_415_and_accept_406(example_server):
    reply = example_server.invoke(ROW, "application/x-protobuf")
    assert reply.status == 415
    assert "application/x-protobuf" in reply.text and "text/csv" in reply.text
    reply = example_server.invoke(ROW, "text/csv", "application/x-protobuf")
    assert reply.status == 406 and "application/x-protobuf" in reply.text


def test_body_over_max_payload_gets_413_r8(example_server):
    """The server was started with SAGEMAKER_MAX_PAYLOAD_IN_MB=1 (1 MiB = 1,048,576 bytes)."""
    over = ROW * (1024 * 1024 // len(ROW) + 1)
    reply = example_server.invoke(over)
    assert reply.status == 413
    assert f"{len(over)} bytes" in reply.text and "MaxPayloadInMB=1" in reply.text
    at_limit = over[: 1024 * 1024 - (1024 * 1024) % len(ROW)]
    assert example_server.invoke(at_limit).status == 200


def test_chunked_body_over_max_payload_gets_413(example_server):
    connection = http.client.HTTPConnection("127.0.0.1", example_server.port, timeout=60)
    chunks = (ROW * 10_000 for _ in range(4))  # 4 x ~390 KB, no Content-Length
    connection.request(
        "POST", "/invocations", chunks, {"Content-Type": "text/csv"}, encode_chunked=True
    )
    response = connection.getresponse()
    assert response.status == 413 and b"at least" in response.read()
    connection.close()


def test_unknown_path_404_and_wrong_method_405(example_server):
    assert example_server.call("GET", "/nope").status == 404
    reply = example_server.call("GET", "/invocations")
    assert reply.status == 405 and "POST" in reply.text


def test_the_server_survives_every_bad_request(example_server, example_rows, csv_of):
    for body in (b"\x00\xff" * 1000, b"[", b"1," * 100_000, ROW * 3 + b"\n\n"):
        for content_type in ("text/csv", "application/json", "application/jsonlines"):
            assert example_server.invoke(body, content_type).status == 400
    assert example_server.call("GET", "/ping").status == 200
    assert example_server.invoke(csv_of(example_rows)).status == 200


def test_model_error_is_500_with_the_exception(serve, tmp_path, user_module, example_model_dir):
    (tmp_path / "model.joblib").write_bytes((example_model_dir / "model.joblib").read_bytes())
    user_module(
        tmp_path,
        """
        def predict_fn(data, model):
            raise RuntimeError("the scoring backend is down")
        """,
    )
    reply = serve(tmp_path).invoke(ROW)
    assert reply.status == 500 and "RuntimeError: the scoring backend is down" in reply.text


@pytest.mark.parametrize(
    ("files", "env", "reason"),
    [
        ({}, {}, "expected one model file"),
        ({"a.joblib": b"", "b.txt": b""}, {}, "found a.joblib, b.txt"),
        ({"model.joblib": b"not a pickle"}, {}, "model.joblib: cannot be loaded"),
        ({"model.json": b"{}"}, {}, "model.json: cannot be loaded"),
        (
            {"code/inference.py": b"def model_fn(model_dir):\n    raise OSError('no weights')\n"},
            {},
            "model_fn failed: OSError: no weights",
        ),
        ({"code/inference.py": b"import not_a_module\n"}, {}, "import failed"),
        ({}, {"SAGEMAKER_PROGRAM": "serve.py"}, "SAGEMAKER_PROGRAM=serve.py: no such file"),
    ],
)
def test_model_that_fails_to_load_is_never_healthy_and_the_log_says_why(
    tmp_path, files, env, reason
):
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    server = start_server(tmp_path, env=env)
    try:
        with pytest.raises(ServerStartError) as failure:
            server.wait_healthy(60)
        assert reason in str(failure.value)
        assert server.process.returncode == 4
        assert "the model cannot be loaded" in server.log_text()
    finally:
        server.stop()


def test_a_model_that_cannot_load_exits_4_from_every_worker_count(tmp_path):
    """Each worker fails its load; the master halts on the first and exits 4, however many
    more fail while it stops them."""
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "inference.py").write_text("import not_a_module\n")
    server = start_server(tmp_path, workers=3)
    try:
        with pytest.raises(ServerStartError, match="import failed"):
            server.wait_healthy(60)
        assert server.process.wait(60) == 4
    finally:
        server.stop()


def test_predict_method_the_model_lacks_fails_the_load(tmp_path, example_model_dir):
    import joblib
    from sklearn.linear_model import LinearRegression

    joblib.dump(LinearRegression().fit(np.eye(3), [1, 2, 3]), tmp_path / "model.pkl")
    cases = [
        (tmp_path, "predict_proba", "LinearRegression) has no predict_proba"),
        (example_model_dir, "score", "'score' is not one of predict"),
    ]
    for model_dir, method, reason in cases:
        with start_server(model_dir, env={"BATCHINFER_PREDICT_METHOD": method}) as server:
            with pytest.raises(ServerStartError) as failure:
                server.wait_healthy(60)
            assert reason in str(failure.value)


def test_npy_object_arrays_are_refused_without_unpickling(example_server):
    stream = io.BytesIO()
    np.save(stream, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    reply = example_server.invoke(stream.getvalue(), "application/x-npy")
    assert reply.status == 400 and "holds object values, not numbers" in reply.text


def test_nan_and_infinity_reach_the_model_which_decides(example_server):
    """NaN and Infinity are read as SageMaker's containers read them; GradientBoosting refuses
    them with ValueError, answered 400 (the request's fault), never 500."""
    rest = ROW.strip().removeprefix(b"59")  # the other nine features
    for body, content_type in (
        (b"nan" + rest, "text/csv"),
        (b"inf" + rest, "text/csv"),
        (b"[NaN" + rest + b"]\n", "application/jsonlines"),
        (b"[[-Infinity" + rest + b"]]", "application/json"),
    ):
        reply = example_server.invoke(body, content_type)
        assert reply.status == 400, reply.text
        assert reply.text.startswith("the model's predict rejected the request: Input X contains")


def test_jsonlines_error_response_is_json_free_text(example_server):
    reply = example_server.invoke(b"{}\n", "application/jsonlines")
    assert reply.status == 400 and reply.content_type.startswith("text/plain")
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.body)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_model_that_fails_to_load_is_one_line_with_its_cause_for_any_worker_count(
    tmp_path, workers
):
    """However many workers log it (and whether gunicorn halts with only HaltServer's
    traceback last), the error is one line: the exception's type and message, and the log
    that holds the rest, which stays."""
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "inference.py").write_text(
        "def model_fn(model_dir):\n    raise RuntimeError('weights file is corrupt')\n"
    )
    for _ in range(3):  # the halt's log differs from one start to the next
        server = start_server(tmp_path, workers=workers)
        try:
            with pytest.raises(ServerStartError) as failure:
                server.wait_healthy(60)
        finally:
            server.stop()
        message = str(failure.value)
        assert "\n" not in message
        assert message.startswith("the model cannot be loaded: ")
        assert "model_fn failed: RuntimeError: weights file is corrupt" in message
        assert message.endswith(f"(model server log: {server.log_path})")
        assert "Traceback" in server.log_path.read_text(), "the log keeps the rest"
        server.log_path.unlink()
