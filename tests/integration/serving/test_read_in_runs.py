"""Numeric CSV answered as its body is read: the WSGI application hands the handler the body a
MiB at a time, and the handler decodes, predicts and encodes each run of records as it
arrives, so a worker holds a run of a request, not all of it, whatever MaxPayloadInMB is
(R8 sets how large a request may be; C3: every request is answered, a bad one with a 400
naming its record)."""

import io
import shutil
import tracemalloc
from typing import Any

import numpy as np
import pytest

from batchinfer.serving import handlers, wsgi_app
from batchinfer.serving.handlers import load_handler
from batchinfer.serving.loaded_workers import LoadedWorkers
from batchinfer.serving.server_errors import RequestError
from batchinfer.serving.wsgi_app import InferenceApp
from batchinfer.transform.server_limits import ServerLimits
from tests.integration.serving.helpers import csv_body


class Socket(io.BytesIO):
    """A request body whose every read is a new object, as a socket's is (a BytesIO read of
    all of it would hand back its own buffer)."""

    def read(self, size: int | None = -1) -> bytes:
        return bytes(memoryview(super().read(size)))


class Body(io.BytesIO):
    """A request body that notes how much of it was read by each call of the model."""

    def __init__(self, data: bytes, reads: list[int]) -> None:
        super().__init__(data)
        self.reads = reads


def call(app: InferenceApp, body: io.BytesIO, headers: dict[str, str]) -> tuple[str, bytes]:
    environ: dict[str, Any] = {
        "PATH_INFO": "/invocations",
        "REQUEST_METHOD": "POST",
        "wsgi.input": body,
        **headers,
    }
    status = []
    answer = b"".join(app(environ, lambda line, _headers: status.append(line)))
    return status[0], answer


@pytest.fixture
def rows(example_rows: np.ndarray) -> np.ndarray:
    return np.resize(example_rows, (40_000, example_rows.shape[1]))  # about 1.4 MB of CSV


def app_of(model_dir, env: dict[str, str], payload_mb: int = 6) -> InferenceApp:
    loaded = LoadedWorkers(1)
    loaded.claim(loaded.assign([]))
    loaded.add()
    return InferenceApp(load_handler(model_dir, env=env), ServerLimits(1, payload_mb), loaded)


def test_runs_are_predicted_as_the_body_arrives_with_the_bytes_of_a_whole_read(
    tmp_path, example_model_dir, rows, monkeypatch
):
    shutil.copy(example_model_dir / "model.joblib", tmp_path)
    monkeypatch.setattr(wsgi_app, "_RUN_CHUNK", 64 * 1024)
    monkeypatch.setattr(handlers, "_DECODE_BYTES", 64 * 1024)  # runs of one batch
    body = csv_body(rows)
    app = app_of(tmp_path, {"BATCHINFER_MAX_BATCH_RECORDS": "1000"})
    reads: list[int] = []
    stream = Body(body, reads)
    predict = app.handler.model.predict
    object.__setattr__(
        app.handler.model, "predict", lambda x: reads.append(stream.tell()) or predict(x)
    )
    headers = {"CONTENT_TYPE": "text/csv", "CONTENT_LENGTH": str(len(body))}
    status, streamed = call(app, stream, headers)
    assert status.startswith("200")
    assert reads[0] < len(body) / 10 and reads == sorted(reads)  # the first passes come early
    whole = load_handler(tmp_path, env={"BATCHINFER_MAX_BATCH_RECORDS": "0"})
    assert streamed == whole.invoke(body, "text/csv", None)[0]


def test_a_worker_holds_a_run_of_the_body_not_the_body(example_model_dir, rows):
    """Allocations, traced while answering 20 MB of CSV: read in MiB parts, the peak is what
    a run takes (about 7 MB here, whether the body is 3, 7 or 14 MB), under half the body's
    size; with quarantine on (which needs the whole request) it holds the whole body."""
    body = csv_body(np.resize(rows, (300_000, rows.shape[1])))  # about 20 MB
    headers = {"CONTENT_TYPE": "text/csv", "CONTENT_LENGTH": str(len(body))}
    peaks = {}
    for name, env in (("runs", {}), ("whole", {"BATCHINFER_MAX_BAD_RECORDS": "0"})):
        app = app_of(example_model_dir, {"BATCHINFER_MAX_BATCH_RECORDS": "4096", **env}, 24)
        assert app.handler.reads_in_runs("text/csv", None, None) is (name == "runs")
        call(app, io.BytesIO(body[:1000].rsplit(b"\n", 1)[0] + b"\n"), {"CONTENT_TYPE": "text/csv"})
        tracemalloc.start()
        status, _ = call(app, Socket(body), headers)
        peaks[name] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert status.startswith("200")
    assert peaks["whole"] > len(body)
    assert peaks["runs"] < len(body) / 2, peaks  # about 7 MB at any size


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "chunked"])
def test_a_bad_record_of_a_later_part_is_named_by_its_place_and_the_body_is_drained(
    example_model_dir, rows, monkeypatch, length
):
    monkeypatch.setattr(wsgi_app, "_RUN_CHUNK", 4096)
    monkeypatch.setattr(handlers, "_DECODE_BYTES", 1)  # runs of one batch: 79 of them
    lines = csv_body(rows[:5000]).splitlines(keepends=True)
    lines[4321] = b"1,2,x,4,5,6,7,8,9,10\n"
    body = b"".join(lines)
    app = app_of(example_model_dir, {"BATCHINFER_MAX_BATCH_RECORDS": "64"})
    stream = io.BytesIO(body)
    headers = {"CONTENT_TYPE": "text/csv"}
    if length:
        headers["CONTENT_LENGTH"] = str(len(body))
    read = []
    predict = app.handler.model.predict
    object.__setattr__(
        app.handler.model, "predict", lambda x: read.append(stream.tell()) or predict(x)
    )
    status, answer = call(app, stream, headers)
    assert status.startswith("400")
    assert b"text/csv record 4322, field 3: 'x' is not a number" in answer
    assert len(read) == 4321 // 64 and read[-1] < len(body) - 4096  # refused part way
    assert stream.tell() == len(body)  # read to its end: the connection can carry the next
    whole = load_handler(example_model_dir, env={"BATCHINFER_MAX_BATCH_RECORDS": "0"})
    with pytest.raises(RequestError) as at_once:
        whole.invoke(body, "text/csv", None)
    assert answer == at_once.value.message.encode()


def test_a_body_over_max_payload_read_in_parts_is_refused_413(example_model_dir, rows):
    body = csv_body(np.resize(rows, (60_000, rows.shape[1])))  # over 1 MiB
    app = app_of(example_model_dir, {}, payload_mb=1)
    for headers in ({"CONTENT_LENGTH": str(len(body))}, {}):
        stream = io.BytesIO(body)
        status, answer = call(app, stream, {"CONTENT_TYPE": "text/csv", **headers})
        assert status.startswith("413") and b"MaxPayloadInMB=1" in answer
        assert stream.tell() == len(body)


@pytest.mark.parametrize(
    ("env", "content_type", "accept"),
    [
        ({"BATCHINFER_MAX_BAD_RECORDS": "5"}, "text/csv", None),  # telling records apart
        ({}, "text/csv; charset=latin-1", None),  # decoded whole from its charset
        ({}, "application/jsonlines", None),
        ({}, "text/csv", "application/json"),  # one JSON document, not a line a record
        ({"BATCHINFER_MAX_BATCH_RECORDS": "0"}, "text/csv", None),  # one pass asked for
    ],
)
def test_what_is_read_whole_first(example_model_dir, env, content_type, accept):
    handler = load_handler(example_model_dir, env=env)
    assert not handler.reads_in_runs(content_type, accept, None)
    plain = load_handler(example_model_dir, env={})
    assert plain.reads_in_runs("text/csv", "text/csv", None)  # numeric CSV, answered in CSV
