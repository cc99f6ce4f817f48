"""Helpers of the model server tests: plain HTTP calls and request bodies."""

import http.client
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

START_TIMEOUT = 60.0


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str | None
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()


class Client:
    """Plain HTTP calls to one server (a new connection per call, headers as given)."""

    def __init__(self, port: int) -> None:
        self.port = port

    def call(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body, dict(headers or {}))
            response = connection.getresponse()
            return Reply(response.status, response.getheader("Content-Type"), response.read())
        finally:
            connection.close()

    def invoke(
        self, body: bytes, content_type: str | None = "text/csv", accept: str | None = None
    ) -> Reply:
        headers = {"Content-Type": content_type} if content_type else {}
        if accept:
            headers["Accept"] = accept
        return self.call("POST", "/invocations", body, headers)


def csv_body(rows: np.ndarray) -> bytes:
    """Rows as headerless CSV, one line per row, with a trailing newline."""
    stream = io.StringIO()
    np.savetxt(stream, rows, delimiter=",", fmt="%.17g")
    return stream.getvalue().encode()


def npy_bytes(array: np.ndarray) -> bytes:
    """An array as a ``.npy`` file."""
    stream = io.BytesIO()
    np.save(stream, array, allow_pickle=False)
    return stream.getvalue()


def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` has forked and not yet reaped (a gunicorn master's workers);
    none once it is gone."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in children.split()]
