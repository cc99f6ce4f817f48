"""The engine's side of the container contract: /execution-parameters and /invocations (C3-C7).

One persistent HTTP/1.1 connection per thread, so MaxConcurrentTransforms requests can be in
flight to one server without a connection per request.
"""

import http.client
import json
import threading
from typing import Any

from batchinfer.transform.record_errors import InvocationError


def checked_response(status: int, body: bytes) -> bytes:
    """The body of a 2xx answer; otherwise an InvocationError (retryable for 5xx, R20)."""
    if not 200 <= status < 300:
        detail = body[:500].decode("utf-8", "replace").strip()
        raise InvocationError(detail, status=status, retryable=status >= 500)
    return body


class ModelServerClient:
    """Talks to one model server ("instance") on localhost."""

    def __init__(
        self,
        port: int,
        *,
        content_type: str | None,
        accept: str | None,
        timeout: float,
        host: str = "127.0.0.1",
    ) -> None:
        self._host, self._port, self._timeout = host, port, timeout
        self._headers = {"Content-Type": content_type, "Accept": accept}
        self._headers = {k: v for k, v in self._headers.items() if v}  # C7: only what is set
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            self._local.conn = conn
        return conn

    def _request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        conn = self._connection()
        try:
            conn.request(method, path, body=body, headers=self._headers if method == "POST" else {})
            response = conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            self._local.conn = None
            raise InvocationError(
                f"{method} {path} failed: {exc or type(exc).__name__}", retryable=True
            ) from exc

    def invoke(self, body: bytes) -> bytes:
        """POST one request body to /invocations and return the response body."""
        return checked_response(*self._request("POST", "/invocations", body))

    def execution_parameters(self) -> dict[str, Any] | None:
        """The container's GET /execution-parameters (C5), or None where it has none."""
        status, data = self._request("GET", "/execution-parameters")
        if status != 200:
            return None
        try:
            params = json.loads(data)
        except ValueError:
            return None
        return params if isinstance(params, dict) else None
