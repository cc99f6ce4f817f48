"""`batchinfer run --engine endpoint` against real servers: a `batchinfer serve` (gunicorn)
started here, and a throttling server. The endpoint engine writes the bytes the transform
and processing engines write (R5-R19), retries throttling (R20) and fails a refused file
alone (R19)."""

import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from batchinfer.engine import endpoint_engine
from batchinfer.engine.http_client import ModelServerClient
from batchinfer.engine.inputs import InputFile
from batchinfer.engine.job_result import JobInterrupted
from batchinfer.engine.local_job import LocalJob, run_job
from batchinfer.engine.outcomes import Progress
from batchinfer.errors import ValidationError
from batchinfer.serving.launcher import start_server
from batchinfer.transform.settings import TransformSettings
from tests.support.cli import run_cli

START_TIMEOUT = 120.0
CSV = dict(content_type="text/csv", accept="text/csv", split_type="Line", assemble_with="Line")
JSONL = dict(
    content_type="application/jsonlines",
    accept="application/jsonlines",
    split_type="Line",
    assemble_with="Line",
)


@pytest.fixture(scope="module")
def endpoint_url(row_sum_model: Path) -> Iterator[str]:
    """Model M behind a real `batchinfer serve` with 2 workers."""
    with start_server(row_sum_model, workers=2) as server:
        server.wait_healthy(START_TIMEOUT)
        yield server.url


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def csv_rows(count: int, seed: int = 0) -> bytes:
    return b"".join(b"id%d,%d,%d\n" % (i, (i * 7 + seed) % 101, i % 13) for i in range(count))


def jsonl_rows(count: int) -> bytes:
    return b"".join(
        json.dumps({"id": f"r{i}", "f": [i % 17, i % 5, 0.5]}).encode() + b"\n"
        for i in range(count)
    )


CASES = {
    "csv-join-filters-multirecord-merged-shards": (
        {"d.csv": csv_rows(30_000)},
        dict(
            CSV,
            batch_strategy="MultiRecord",
            max_payload_mb=1,
            input_filter="$[1:]",
            join_source="Input",
            output_filter="$[0,-1]",
            instance_count=2,
        ),
        dict(shards=3, merge=True),
    ),
    "jsonl-join-single-record": (
        {"a.jsonl": jsonl_rows(300), "sub/b.jsonl": jsonl_rows(40)},
        dict(JSONL, batch_strategy="SingleRecord", input_filter="$.f", join_source="Input"),
        {},
    ),
    "csv-multirecord-unmerged-shards": (
        {"x.csv": csv_rows(5_000, seed=3), "y.csv": b"a,1,2\nb,3,4"},
        dict(CSV, batch_strategy="MultiRecord", input_filter="$[1:]", instance_count=2),
        dict(shards=2),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_transform_processing_and_endpoint_engines_write_the_same_bytes(
    tmp_path, row_sum_model, endpoint_url, case
):
    files, settings, sharding = CASES[case]
    for name, data in files.items():
        write(tmp_path / "in" / name, data)
    outputs = {}
    for engine in ("transform", "processing", "endpoint"):
        job = LocalJob(
            [tmp_path / "in"],
            tmp_path / engine,
            None if engine == "endpoint" else row_sum_model,
            TransformSettings(**settings),
            engine=engine,
            endpoint_url=endpoint_url if engine == "endpoint" else None,
            **sharding,
        )
        result = run_job(job)
        assert result.succeeded, result.failures
        outputs[engine] = {
            path.relative_to(tmp_path / engine).as_posix(): path.read_bytes()
            for path in sorted((tmp_path / engine).rglob("*.out"))
        }
        counts = [(f.name, f.records_in, f.records_out, f.outputs) for f in result.files]
        outputs[engine]["counts"] = repr(counts).encode()
    assert outputs["endpoint"] == outputs["transform"] == outputs["processing"]
    assert len(outputs["endpoint"]) > 1 and all(outputs["endpoint"].values())


class Throttling(BaseHTTPRequestHandler):
    """The container contract with model M for CSV, answering 429 to the first
    ``server.throttle`` requests, and ``server.ping_status`` to the first ``server.warming``
    pings."""

    def do_GET(self) -> None:
        if self.path != "/ping":
            self._answer(404, b"")
            return
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.pings += 1  # type: ignore[attr-defined]
            warming = self.server.pings <= self.server.warming  # type: ignore[attr-defined]
        if warming:
            self._answer(self.server.ping_status, WARMING)  # type: ignore[attr-defined]
        else:
            self._answer(200, b"")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.bodies.append(body)  # type: ignore[attr-defined]
            throttled = len(self.server.bodies) <= self.server.throttle  # type: ignore[attr-defined]
            if len(self.server.bodies) == self.server.interrupt_at:  # type: ignore[attr-defined]
                # Ctrl-C while this request is in flight
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        if throttled:
            self._answer(429, b"ThrottlingException: Rate exceeded")
            return
        rows = body.decode().splitlines()
        self._answer(200, "\n".join(str(sum(map(int, r.split(",")))) for r in rows).encode())

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def throttling(address: tuple[str, int], *, listening: bool = True) -> ThreadingHTTPServer:
    """A Throttling server at ``address`` (bound and listening unless told not to), its
    counts at zero: 2 requests throttled, no ping answered 503, no Ctrl-C."""
    server = ThreadingHTTPServer(address, Throttling, bind_and_activate=listening)
    server.bodies, server.throttle, server.lock = [], 2, threading.Lock()  # type: ignore[attr-defined]
    server.interrupt_at = 0  # type: ignore[attr-defined]
    server.pings, server.warming, server.ping_status = 0, 0, 503  # type: ignore[attr-defined]
    return server


@pytest.fixture
def throttling_server() -> Iterator[ThreadingHTTPServer]:
    server = throttling(("127.0.0.1", 0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_throttled_requests_are_retried_with_backoff_and_succeed_r20(tmp_path, throttling_server):
    data = write(tmp_path / "in" / "d.csv", b"1,2\n3,4\n5,6\n")
    url = f"http://127.0.0.1:{throttling_server.server_address[1]}"
    settings = TransformSettings(**CSV, batch_strategy="SingleRecord")
    result = run_job(
        LocalJob([data], tmp_path / "out", None, settings, engine="endpoint", endpoint_url=url)
    )
    assert result.succeeded and result.endpoint_url == url
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == b"3\n7\n11\n"
    bodies = throttling_server.bodies  # type: ignore[attr-defined]
    assert bodies == [b"1,2\n", b"1,2\n", b"1,2\n", b"3,4\n", b"5,6\n"]


WARMING = b"the model is loaded in 1 of 2 workers"


def _csv_job(data: Path, out: Path, url: str) -> LocalJob:
    """A CSV job of one file through the endpoint engine at ``url``."""
    return LocalJob(
        [data], out, None, TransformSettings(**CSV), engine="endpoint", endpoint_url=url
    )


def test_a_server_whose_workers_still_load_is_asked_again_until_its_ping_is_200_c4(
    tmp_path, throttling_server
):
    """`batchinfer serve` answers 503 until every worker has loaded the model: a run
    started beside it (`serve &`, then `run --engine endpoint`) waits for it."""
    throttling_server.throttle, throttling_server.warming = 0, 3  # type: ignore[attr-defined]
    data = write(tmp_path / "in" / "d.csv", b"1,2\n3,4\n")
    url = f"http://127.0.0.1:{throttling_server.server_address[1]}"
    job = _csv_job(data, tmp_path / "out", url)
    assert run_job(job).succeeded
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == b"3\n7\n"
    assert throttling_server.pings == 4  # type: ignore[attr-defined]


@pytest.mark.parametrize(("status", "pings"), [(503, None), (500, 1)])
def test_a_ping_that_stays_503_or_answers_another_error_refuses_the_run_quoting_it_c4(
    throttling_server, monkeypatch, status, pings
):
    monkeypatch.setattr(endpoint_engine, "WARMING_SECONDS", 2.0)
    throttling_server.warming, throttling_server.ping_status = 10**6, status  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{throttling_server.server_address[1]}"
    client = ModelServerClient.from_url(url, content_type=None, accept=None, timeout=5)
    said = f"GET /ping answered {status} \\({WARMING.decode()}\\), not 200"
    with pytest.raises(ValidationError, match=said):
        endpoint_engine.check_healthy(client)
    asked = throttling_server.pings  # type: ignore[attr-defined]
    assert asked == pings if pings else asked > 1  # a 503 is asked again until it gives up


def test_a_ping_that_times_out_while_no_worker_accepts_yet_is_asked_again_c4():
    """A `batchinfer serve` whose first worker still loads holds the ping in its listen
    queue: past the client's timeout, it is asked again, as a 503 is."""
    server = throttling(("127.0.0.1", 0))  # listening, not accepting
    server.handle_error = lambda request, address: None  # type: ignore[method-assign]  # pings given up on
    threading.Timer(1.5, server.serve_forever).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        endpoint_engine.check_healthy(
            ModelServerClient.from_url(url, content_type=None, accept=None, timeout=0.5)
        )
    finally:
        server.shutdown()
        server.server_close()
    assert server.pings >= 1  # type: ignore[attr-defined]


def test_a_server_that_starts_listening_after_the_run_began_is_waited_for_c4(tmp_path):
    """`batchinfer serve ... &` then `batchinfer run --engine endpoint` at once: the server
    binds its port a second or so later."""
    data = write(tmp_path / "in" / "d.csv", b"1,2\n")
    with ThreadingHTTPServer(("127.0.0.1", 0), Throttling) as closed:
        port = closed.server_address[1]  # free again: the server below takes it later
    late = throttling(("127.0.0.1", port), listening=False)
    late.allow_reuse_address = True
    late.throttle = 0  # type: ignore[attr-defined]

    def listen_later() -> None:
        time.sleep(1.0)
        late.server_bind()
        late.server_activate()
        late.serve_forever()

    threading.Thread(target=listen_later, daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    job = _csv_job(data, tmp_path / "out", url)
    try:
        assert run_job(job).succeeded
    finally:
        late.shutdown()
        late.server_close()
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == b"3\n"


class BytesDone(Progress):
    def __init__(self) -> None:
        self.told: list[tuple[str, int]] = []

    def file_progress(self, instance: int, file: InputFile, done: int) -> None:
        self.told.append((file.name, done))


def test_progress_is_told_the_bytes_done_after_every_request(tmp_path, throttling_server):
    throttling_server.throttle = 0  # type: ignore[attr-defined]
    data = write(tmp_path / "in" / "d.csv", b"1,2\n3,4\n5,6\n")
    url = f"http://127.0.0.1:{throttling_server.server_address[1]}"
    settings = TransformSettings(**CSV, batch_strategy="SingleRecord")
    progress = BytesDone()
    job = LocalJob([data], tmp_path / "out", None, settings, engine="endpoint", endpoint_url=url)
    assert run_job(job, progress).succeeded
    assert progress.told == [("d.csv", 4), ("d.csv", 8), ("d.csv", 12)]


def test_ctrl_c_sends_no_more_requests_and_leaves_no_output_r19(tmp_path, throttling_server):
    """Ctrl-C while a request is in flight: no further request is sent, the file's output
    (whole or partial) is removed, the manifest says INTERRUPTED and there is no _SUCCESS."""
    throttling_server.throttle, throttling_server.interrupt_at = 0, 2  # type: ignore[attr-defined]
    data = write(tmp_path / "in" / "d.csv", b"1,2\n" * 500)
    url = f"http://127.0.0.1:{throttling_server.server_address[1]}"
    settings = TransformSettings(**CSV, batch_strategy="SingleRecord", max_concurrent_transforms=1)
    out = tmp_path / "out"
    job = LocalJob([data], out, None, settings, engine="endpoint", endpoint_url=url)
    with pytest.raises(JobInterrupted) as stopped:
        run_job(job)
    assert stopped.value.result.status == "INTERRUPTED"
    assert len(throttling_server.bodies) < 500  # type: ignore[attr-defined]
    assert sorted(p.name for p in out.iterdir()) == ["_manifest.json"]
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["status"] == "INTERRUPTED"
    assert manifest["files"][0]["status"] == "INTERRUPTED"


def test_a_refused_record_fails_its_file_naming_it_others_complete_r19(tmp_path, endpoint_url):
    write(tmp_path / "in" / "bad.csv", b"1,2\n3,4\nbad,1\n5,6\n")
    write(tmp_path / "in" / "good.csv", b"1,2\n3,4\n")
    settings = TransformSettings(**CSV, batch_strategy="SingleRecord")
    job = LocalJob(
        [tmp_path / "in"],
        tmp_path / "out",
        None,
        settings,
        engine="endpoint",
        endpoint_url=endpoint_url,
    )
    result = run_job(job)
    assert not result.succeeded
    [failure] = result.failures
    assert failure.name == "bad.csv"
    assert failure.error.startswith("bad.csv: record 3: request failed: HTTP 400: ")
    assert "bad" in failure.error.split("HTTP 400: ", 1)[1]  # the body's excerpt
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "_manifest.json",
        "good.csv.out",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--engine", "endpoint"], "--engine endpoint needs --endpoint-url http://HOST:PORT"),
        (
            ["--endpoint-url", "{url}", "--model", "{model}"],
            "--endpoint-url is only for --engine endpoint",
        ),
        (
            ["--engine", "endpoint", "--endpoint-url", "{url}", "--model", "{model}"],
            "--model is not used with --engine endpoint",
        ),
        (["--engine", "endpoint", "--endpoint-url", "ftp://host"], "is not a server URL"),
        (
            ["--engine", "endpoint", "--endpoint-url", "{url}", "--max-payload-mb", "10"],
            "max_payload_mb (MaxPayloadInMB): 10 is not allowed with the endpoint engine",
        ),
        (["--engine", "transform"], "--engine transform needs --model"),
        (["--engine", "batch"], "--engine must be transform, processing or endpoint"),
    ],
)
def test_endpoint_options_are_checked_before_any_work_exit_2(
    tmp_path, capsys, row_sum_model, endpoint_url, options, message
):
    data = write(tmp_path / "in" / "d.csv", b"1,2\n")
    given = [o.format(url=endpoint_url, model=row_sum_model) for o in options]
    code, said = run_cli(capsys, "run", str(data), "--output", str(tmp_path / "out"), *given)
    assert code == 2 and message in " ".join(said.split()), said
    assert not (tmp_path / "out").exists()


def test_an_unreachable_endpoint_is_named_and_nothing_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(endpoint_engine, "STARTING_SECONDS", 0.5)  # asked again this long
    data = write(tmp_path / "in" / "d.csv", b"1,2\n")
    with ThreadingHTTPServer(("127.0.0.1", 0), Throttling) as closed:
        port = closed.server_address[1]  # bound, then closed: nothing listens there
    url = f"http://127.0.0.1:{port}"
    code, said = run_cli(
        capsys,
        "run",
        str(data),
        "--output",
        str(tmp_path / "out"),
        "--engine",
        "endpoint",
        "--endpoint-url",
        url,
    )
    assert code == 2 and f"--endpoint-url {url}: cannot reach it" in said
    assert not list((tmp_path / "out").glob("*.out"))


def test_run_scores_through_the_endpoint_from_the_command_line(tmp_path, capsys, endpoint_url):
    data = write(tmp_path / "in" / "d.csv", b"a,1,2\nb,3,4\n")
    code, said = run_cli(
        capsys,
        "run",
        str(data),
        "--output",
        str(tmp_path / "out"),
        "--engine",
        "endpoint",
        "--endpoint-url",
        endpoint_url,
        "--content-type",
        "text/csv",
        "--accept",
        "text/csv",
        "--split-type",
        "Line",
        "--assemble-with",
        "Line",
        "--input-filter",
        "$[1:]",
        "--join-source",
        "Input",
        "--json",
    )
    assert code == 0, said
    assert (tmp_path / "out" / "d.csv.out").read_bytes() == b"a,1,2,3\nb,3,4,7\n"
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert (manifest["engine"], manifest["endpoint_url"]) == ("endpoint", endpoint_url)
    assert (tmp_path / "out" / "_SUCCESS").exists()


@pytest.mark.parametrize(
    ("url", "reached"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://models.internal/v1/score/", "http://models.internal:80/v1/score"),
        ("https://models.internal:8443/x", "https://models.internal:8443/x"),
    ],
)
def test_an_endpoint_url_may_carry_a_path_prefix_and_https(url, reached):
    client = ModelServerClient.from_url(url, content_type=None, accept=None, timeout=1.0)
    assert client.url == reached


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("127.0.0.1:8080", "must start with http:// or https://"),
        ("http://", "names no host"),
        ("http://h:99999", "port is not valid"),
        ("http://h:8080/?a=1", "query or fragment"),
    ],
)
def test_a_malformed_endpoint_url_is_named(url, problem):
    with pytest.raises(
        ValidationError, match=rf"--endpoint-url: {re.escape(repr(url))} .*{problem}"
    ):
        ModelServerClient.from_url(url, content_type=None, accept=None, timeout=1.0)
