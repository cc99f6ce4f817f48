"""The launcher and the serve command: free ports, a port already taken, clean SIGTERM shutdown
(C10), env (C6, R21), SAGEMAKER_BIND_TO_PORT (C3), and argument errors."""

import os
import signal
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from batchinfer.engine.http_client import ModelServerClient
from batchinfer.parent_death import PARENT_PID_VAR
from batchinfer.serving.launcher import start_server
from batchinfer.serving.server_errors import ServerStartError
from batchinfer.transform.record_errors import InvocationError


def test_sigterm_stops_cleanly_with_exit_0_c10(example_model_dir, tmp_path):
    log = tmp_path / "serve.log"
    with start_server(example_model_dir, workers=2, log_path=log) as server:
        server.wait_healthy(60)
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.stop() == 0
    assert "Shutting down: Master" in log.read_text()


def test_a_request_in_flight_when_the_server_is_stopped_is_answered_first_c10(
    model_dir, user_module, tmp_path
):
    """SIGTERM stops a server gracefully: the request its worker is scoring is answered,
    then the worker leaves, then the master, with exit code 0."""
    with _scoring(model_dir, user_module, tmp_path, seconds=1.5) as (server, answers):
        assert server.stop() == 0
    assert answers == [(200, b"2\n2\n")]


def test_sigint_during_a_graceful_stop_stops_the_workers_at_once_c10(
    model_dir, user_module, tmp_path
):
    """A graceful stop (SIGTERM) waits up to 25 s for the request in flight; SIGINT or SIGQUIT
    to the master meanwhile stops its workers at once, as gunicorn's quick shutdown does."""
    with _scoring(model_dir, user_module, tmp_path, seconds=120) as (server, answers):
        server.process.send_signal(signal.SIGTERM)
        threading.Event().wait(0.5)
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(20) == 0  # long before the 25 s a graceful stop gives
    cut_short = isinstance(answers[0], InvocationError) or answers[0][0] == 500
    assert cut_short, f"the request in flight is not scored: {answers[0]}"


def test_a_quick_stop_kills_a_worker_that_its_signal_cannot_reach_c10(
    model_dir, user_module, tmp_path
):
    """SIGQUIT (what a server gets once the local engine that started it is gone) gives a
    worker 2 s: one busy where no signal handler runs (native code; here the stop signals
    are blocked) is killed then, not after the 25 s of a graceful stop."""
    with _scoring(model_dir, user_module, tmp_path, seconds=120, deaf=True) as (server, answers):
        server.process.send_signal(signal.SIGQUIT)
        assert server.process.wait(20) == 0  # long before the 25 s a graceful stop gives
    cut_short = isinstance(answers[0], InvocationError) or answers[0][0] == 500
    assert cut_short, f"the request in flight is not scored: {answers[0]}"


@contextmanager
def _scoring(model_dir, user_module, tmp_path, *, seconds: float, deaf: bool = False):
    """A server of ``model_dir`` and one worker whose predict_fn takes ``seconds`` (``deaf``:
    with the stop signals blocked), scoring a request of two records sent from a thread;
    ``(server, answers)`` once the worker is in the predict_fn, where ``answers`` gets the
    request's ``(status, body)``, or the InvocationError that cut it short."""
    started = tmp_path / "started"
    user_module(
        model_dir,
        f"""
        import pathlib, signal, time

        def predict_fn(data, model):
            if {deaf}:
                signal.pthread_sigmask(
                    signal.SIG_BLOCK, {{signal.SIGINT, signal.SIGQUIT, signal.SIGTERM}}
                )
            pathlib.Path({str(started)!r}).touch()
            time.sleep({seconds})
            return [len(data)] * len(data)
        """,
    )
    answers: list = []
    with start_server(model_dir, workers=1) as server:
        server.wait_healthy(60)
        client = ModelServerClient(
            server.port, content_type="text/csv", accept="text/csv", timeout=seconds + 60
        )

        def ask() -> None:
            try:
                answers.append(client.send(b"1,2\n3,4\n", "text/csv", "text/csv"))
            except InvocationError as exc:
                answers.append(exc)

        asking = threading.Thread(target=ask)
        asking.start()
        for _ in range(600):
            if started.exists():
                break
            threading.Event().wait(0.05)
        try:
            yield server, answers
        finally:
            server.stop()
            asking.join(seconds + 60)
            client.close()


def test_a_stopped_workers_exit_handlers_run_and_what_it_printed_is_kept_c10(
    model_dir, user_module, tmp_path
):
    """Workers and master leave without tearing down their interpreters, but not without
    what a clean exit does: each worker's exit handlers (a user module's here) run, and
    what they print, held in stdout's buffer (the server run as a container runs it, its
    output into a file), reaches the log."""
    user_module(
        model_dir,
        """
        import atexit, os, sys
        print("worker", os.getpid(), "loaded the module", file=sys.stderr)
        atexit.register(lambda: print("worker", os.getpid(), "ran its exit handler"))
        """,
    )
    log = tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    serve = [sys.executable, "-m", "batchinfer", "serve", "--model-dir", str(model_dir)]
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*serve, "--port", "0", "--host", "127.0.0.1", "--workers", "2"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        workers = _pids_saying(log, "loaded the module", 2)
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0
    assert _pids_saying(log, "ran its exit handler", 2) == workers
    assert log.read_text().rstrip().endswith("Shutting down: Master")


def _pids_saying(log, words: str, count: int) -> set[int]:
    """The processes whose ``worker PID <words>`` lines ``log`` holds, once it holds
    ``count`` of them (within 60 s)."""
    for _ in range(600):
        lines = [line for line in log.read_text().splitlines() if words in line]
        if len(lines) == count:
            return {int(line.split()[1]) for line in lines}
        threading.Event().wait(0.1)
    raise AssertionError(f"not {count} lines of {words!r}:\n{log.read_text()}")


def test_temporary_log_removed_after_clean_stop_kept_after_kill(example_model_dir):
    with start_server(example_model_dir) as clean:
        clean.wait_healthy(60)
    assert clean.process.returncode == 0
    assert not clean.log_path.exists()

    killed = start_server(example_model_dir)
    try:
        killed.wait_healthy(60)
        os.killpg(killed.process.pid, signal.SIGKILL)
        killed.process.wait()
        assert killed.stop() == -signal.SIGKILL
        assert "Listening at" in killed.log_text()
    finally:
        killed.log_path.unlink(missing_ok=True)


def test_explicit_port_and_payload_env(example_model_dir):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"SAGEMAKER_MAX_PAYLOAD_IN_MB": "0"}
    with start_server(example_model_dir, port=port, env=env) as server:
        server.wait_healthy(60)
        assert server.port == port
        assert "MaxPayloadInMB=0" in server.log_text()


class _AlwaysHealthy(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


def test_a_port_another_server_holds_is_one_line_naming_it_c3(example_model_dir):
    """The other server answers /ping with 200, yet is never taken for the model server."""
    other = HTTPServer(("127.0.0.1", 0), _AlwaysHealthy)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    port = other.server_address[1]
    try:
        with (
            start_server(example_model_dir, port=port) as server,
            pytest.raises(ServerStartError) as failure,
        ):
            server.wait_healthy(60)
    finally:
        other.shutdown()
        other.server_close()
    assert str(failure.value) == (
        f"model server cannot listen on 127.0.0.1:{port}: another process uses that port "
        f"(model server log: {server.log_path})"
    )
    assert "Connection in use" in server.log_text()
    server.log_path.unlink()


def test_sagemaker_bind_to_port_and_bad_settings_exit_2(example_model_dir, tmp_path):
    serve = [sys.executable, "-m", "batchinfer", "serve", "--model-dir"]
    cases = [
        ([str(tmp_path / "missing")], {}, "--model-dir"),
        ([str(example_model_dir), "--workers", "0"], {}, "--workers 0"),
        ([str(example_model_dir)], {"SAGEMAKER_MAX_PAYLOAD_IN_MB": "lots"}, "not a whole number"),
        ([str(example_model_dir)], {"SAGEMAKER_MAX_PAYLOAD_IN_MB": "101"}, "outside 0..100"),
        ([str(example_model_dir)], {"SAGEMAKER_BIND_TO_PORT": "70000"}, "--port 70000"),
    ]
    for args, env, message in cases:
        result = subprocess.run(
            serve + args,
            env={"PATH": "/usr/bin:/bin", **env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 2, result.stderr
        assert message in result.stderr


def test_a_server_whose_engine_is_gone_before_it_serves_exits_without_a_core_dump(
    example_model_dir, tmp_path
):
    """A server the local engine started quits once that engine is gone (SIGQUIT, from the
    kernel or at once when it is gone already), even before gunicorn handles the signal:
    exit 128 + SIGQUIT, not SIGQUIT's default action, which dumps core."""
    engine = subprocess.Popen(["true"])
    engine.wait()  # a process id that is no longer the server's parent
    serve = [sys.executable, "-m", "batchinfer", "serve", "--model-dir", str(example_model_dir)]
    server = subprocess.run(
        [*serve, "--port", "0", "--host", "127.0.0.1"],
        env={**os.environ, PARENT_PID_VAR: str(engine.pid)},
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    )
    assert server.returncode == 128 + signal.SIGQUIT, server.stderr
    assert list(tmp_path.iterdir()) == []  # no core file
