"""The model server for real (gunicorn on localhost): the container contract (C3-C5, C9) and
every content type in and out, one output line per input record (R13, R17)."""

import io
import json

import numpy as np


def test_ping_and_execution_parameters_c4_c5(example_server):
    assert example_server.call("GET", "/ping").status == 200
    reply = example_server.call("GET", "/execution-parameters")
    assert reply.status == 200 and reply.content_type == "application/json"
    assert json.loads(reply.body) == {
        "MaxConcurrentTransforms": 2,
        "BatchStrategy": "MULTI_RECORD",
        "MaxPayloadInMB": 1,
    }


def test_csv_in_csv_out_one_line_per_record_with_trailing_newline_r13(
    example_server, example_model, example_rows, csv_of
):
    reply = example_server.invoke(csv_of(example_rows), accept="text/csv")
    assert reply.status == 200 and reply.content_type == "text/csv"
    expected = "".join(f"{label}\n" for label in example_model.predict(example_rows))
    assert reply.text == expected


def test_csv_without_final_newline_crlf_and_charset_c9(
    example_server, example_model, example_rows, csv_of
):
    body = csv_of(example_rows).replace(b"\n", b"\r\n").rstrip(b"\r\n")
    reply = example_server.invoke(
        body, content_type="text/csv; charset=utf-8", accept="text/csv; q=1"
    )
    assert reply.status == 200
    assert reply.text.splitlines() == [str(v) for v in example_model.predict(example_rows)]


def test_missing_accept_answers_in_the_request_type_and_missing_type_is_csv(
    example_server, example_model, example_rows, csv_of
):
    expected = [str(v) for v in example_model.predict(example_rows)]
    for content_type, accept in [("text/csv", None), ("text/csv", "*/*"), (None, None)]:
        reply = example_server.invoke(csv_of(example_rows), content_type, accept)
        assert (reply.status, reply.content_type) == (200, "text/csv")
        assert reply.text.splitlines() == expected


def test_jsonlines_in_and_out(example_server, example_model, example_rows):
    body = "".join(json.dumps(row) + "\n" for row in example_rows.tolist()).encode()
    reply = example_server.invoke(body, "application/jsonlines", "application/jsonlines")
    assert reply.status == 200 and reply.content_type == "application/jsonlines"
    lines = reply.text.split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(example_rows)
    assert [json.loads(line) for line in lines[:-1]] == example_model.predict(example_rows).tolist()


def test_json_instances_and_bare_list_in_json_out(example_server, example_model, example_rows):
    expected = example_model.predict(example_rows).tolist()
    for document in ({"instances": example_rows.tolist()}, example_rows.tolist()):
        reply = example_server.invoke(json.dumps(document).encode(), "application/json")
        assert reply.status == 200 and reply.content_type == "application/json"
        assert json.loads(reply.body) == expected


def test_npy_in_and_out(example_server, example_model, example_rows):
    stream = io.BytesIO()
    np.save(stream, example_rows)
    reply = example_server.invoke(stream.getvalue(), "application/x-npy", "application/x-npy")
    assert reply.status == 200 and reply.content_type == "application/x-npy"
    np.testing.assert_array_equal(
        np.load(io.BytesIO(reply.body)), example_model.predict(example_rows)
    )


def test_csv_in_jsonlines_and_json_out(example_server, example_model, example_rows, csv_of):
    expected = example_model.predict(example_rows).tolist()
    reply = example_server.invoke(csv_of(example_rows), accept="application/jsonlines")
    assert [json.loads(line) for line in reply.text.splitlines()] == expected
    reply = example_server.invoke(csv_of(example_rows), accept="application/xml, application/json")
    assert reply.content_type == "application/json" and json.loads(reply.body) == expected


def test_missing_values_are_nan_for_the_model(example_server, example_model, example_rows):
    """An empty field is a missing value (NaN); GradientBoosting refuses NaN with a 400."""
    reply = example_server.invoke(b"1,2,3,4,5,6,7,8,9,\n")
    assert reply.status == 400 and "NaN" in reply.text


def test_multirecord_payload_near_the_limit_r7(example_server, example_model, tmp_path):
    """Example records filling the server's 1 MiB limit: one output line each, in order."""
    from batchinfer.examples import write_example_csv

    write_example_csv(tmp_path / "records.csv", 30_000, seed=1)
    data = (tmp_path / "records.csv").read_bytes()
    body = data[: data.rfind(b"\n", 0, 1024 * 1024) + 1]
    reply = example_server.invoke(body)
    assert reply.status == 200
    rows = np.loadtxt(io.BytesIO(body), delimiter=",")
    assert reply.text.splitlines() == [str(v) for v in example_model.predict(rows)]
