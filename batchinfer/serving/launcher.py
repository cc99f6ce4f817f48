"""Starting ``batchinfer serve`` in a subprocess on a localhost port: the local engine's
instances and the tests' servers.

The server binds port 0 (the kernel picks a free port as it binds: no race) unless a port
is given; the port is read from gunicorn's "Listening at" log line. A port given that another
process holds is one line naming it. The log goes to a file whose tail any
start-up error quotes; a temporary log is removed when its server stops cleanly.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from batchinfer.parent_death import child_of_this_process
from batchinfer.serving.server_errors import MODEL_LOAD_FAILED, ServerStartError

_LISTENING = re.compile(rb"Listening at: http://[^\s]+:(\d+)")
_IN_USE = re.compile(rb"Connection in use: \('([^']*)', (\d+)\)")  # gunicorn's, on EADDRINUSE
_POLL_SECONDS = 0.05
_PING_TIMEOUT = 2.0  # spec C4: a ping must answer 200 within 2 s
_LOG_TAIL_LINES = 30
# The server's log line that says why the model did not load (the first of them: every
# worker that tried logs one).
_LOAD_FAILURE = re.compile(rf"\[ERROR\] ({MODEL_LOAD_FAILED}: .*)$", re.MULTILINE)


class ServerProcess:
    """One running model server; stop it with :meth:`stop` or a ``with`` block."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        log_path: Path,
        port: int | None,
        *,
        temporary_log: bool = False,
    ) -> None:
        self.process = process
        self.log_path = log_path
        self._port = port
        self._temporary_log = temporary_log
        self._log_quoted = False  # a ServerStartError carried the log's tail

    @property
    def port(self) -> int:
        """The server's port, once it has bound it (waits up to 60 s for the log line)."""
        if self._port is None:
            self._port = self._wait_for_port(60.0)
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        """Everything the server has logged so far."""
        return self.log_path.read_bytes().decode("utf-8", "replace")

    def _log_tail(self) -> str:
        lines = self.log_text().splitlines()[-_LOG_TAIL_LINES:]
        return "\n".join(f"  | {line}" for line in lines) or "  | (empty log)"

    def _failure(self, what: str) -> ServerStartError:
        """Why the server did not start: the one line saying why its model did not load (the
        log kept for more), or else the log's tail."""
        load_failure = _LOAD_FAILURE.search(self.log_text())
        if load_failure:
            return ServerStartError(f"{load_failure.group(1)} (model server log: {self.log_path})")
        self._log_quoted = True
        return ServerStartError(f"model server {what}; its log ends with:\n{self._log_tail()}")

    def _wait_for_port(self, timeout: float) -> int:
        """The port from the server's own "Listening at" line: a port given and already
        taken fails at gunicorn's first try, naming it, not after its retries."""
        deadline = time.monotonic() + timeout
        while True:
            log = self.log_path.read_bytes()
            match = _LISTENING.search(log)
            if match:
                return int(match.group(1))
            in_use = _IN_USE.search(log)
            if in_use:
                host, port = in_use.group(1).decode(), in_use.group(2).decode()
                raise ServerStartError(
                    f"model server cannot listen on {host}:{port}: another process uses that "
                    f"port (model server log: {self.log_path})"
                )
            if self.process.poll() is not None:
                raise self._failure(f"exited with code {self.process.returncode} before listening")
            if time.monotonic() > deadline:
                raise self._failure(f"did not listen within {timeout:g} s")
            time.sleep(_POLL_SECONDS)

    def wait_healthy(self, timeout: float) -> None:
        """Return once ``GET /ping`` answers 200; raise :class:`ServerStartError` (with the
        log's tail) if the server exits first or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        # Even a port given is pinged only once this server listens on it: whatever else
        # answers there is never taken for this server.
        self._port = self._wait_for_port(timeout)
        said = ""  # what the last ping not answered 200 said (503: the workers still loading)
        while True:
            if self.process.poll() is not None:
                raise self._failure(f"exited with code {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.url}/ping", timeout=_PING_TIMEOUT) as reply:
                    if reply.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                said = f" (its last /ping: {exc.code} {_answer_of(exc)})"
            except (urllib.error.URLError, OSError):
                said = ""
            if time.monotonic() > deadline:
                raise self._failure(f"was not healthy within {timeout:g} s{said}")
            time.sleep(_POLL_SECONDS)

    def stop(self, grace: float = 30.0) -> int:
        """SIGTERM, then SIGKILL to the whole process group after ``grace`` seconds (C10: the
        container gets SIGTERM, then SIGKILL 30 s later). Returns the exit code. A temporary log is
        removed if the server exited with 0 or an error already quoted its tail; the log of a server
        that crashed or had to be killed otherwise stays for its owner to read."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self._temporary_log and (self.process.returncode == 0 or self._log_quoted):
            self.log_path.unlink(missing_ok=True)
        return self.process.returncode

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def _answer_of(refused: urllib.error.HTTPError) -> str:
    """The body of an answer that was not 200, as far as it can be read."""
    with refused:
        try:
            return refused.read().decode("utf-8", "replace")
        except OSError:
            return "(its answer could not be read)"


def start_server(
    model_dir: Path,
    *,
    port: int | None = None,
    workers: int | None = 1,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
) -> ServerProcess:
    """Start ``batchinfer serve`` for ``model_dir`` on 127.0.0.1 and return at once.

    ``port`` None picks a free port; ``workers`` None leaves them to the server
    (SAGEMAKER_MODEL_SERVER_WORKERS, else one per GPU, else one per core). ``env`` entries
    are added to this process's environment (the container environment of spec R21: the
    model's Environment, then the job's, then the platform's). The log goes to ``log_path``
    or a temporary file. Call :meth:`ServerProcess.wait_healthy` before sending requests
    (spec C4).
    """
    temporary_log = log_path is None
    if log_path is None:
        handle, name = tempfile.mkstemp(prefix="batchinfer-serve-", suffix=".log")
        os.close(handle)
        log_path = Path(name)
    command = [
        sys.executable,
        "-m",
        "batchinfer.commands.serve",  # `batchinfer serve` without the other commands' imports
        "--model-dir",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port or 0),
        *([] if workers is None else ["--workers", str(workers)]),
    ]
    # The server stops once this process is gone (start it from the main thread).
    child_env = child_of_this_process({**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"})
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env,
            start_new_session=True,
        )
    return ServerProcess(process, log_path, port, temporary_log=temporary_log)
