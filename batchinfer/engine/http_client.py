"""The engine's side of the container contract: /ping, /execution-parameters and
/invocations (C3-C7: the HTTP between the platform and the container).

One persistent HTTP/1.1 connection per thread, so MaxConcurrentTransforms requests can be in
flight to one server without a connection per request.
"""

import http.client
import json
import threading
import urllib.parse
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.transform.csv_dialect import CUSTOM_ATTRIBUTES_HEADER
from batchinfer.transform.record_errors import InvocationError, checked_response


class ModelServerClient:
    """Talks to one server of the container contract: a local model server ("instance")
    by port, or any server by URL (:meth:`from_url`)."""

    def __init__(
        self,
        port: int,
        *,
        content_type: str | None,
        accept: str | None,
        timeout: float,
        host: str = "127.0.0.1",
        https: bool = False,
        prefix: str = "",
        custom_attributes: str | None = None,
    ) -> None:
        self._host, self._port, self._timeout = host, port, timeout
        self._https, self._prefix = https, prefix.rstrip("/")
        self._content_type, self._accept = content_type, accept
        self._custom_attributes = custom_attributes
        self._local = threading.local()
        self._closed = False

    def close(self) -> None:
        """Send nothing more; a request in flight goes on. The engine closes a client as it
        stops its server, whose port another process may take once it is gone."""
        self._closed = True

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        content_type: str | None,
        accept: str | None,
        timeout: float,
        custom_attributes: str | None = None,
    ) -> "ModelServerClient":
        """A client for the server at ``url`` (``http[s]://HOST[:PORT][/PREFIX]``); its
        routes are ``<url>/ping`` and ``<url>/invocations``."""
        parts = urllib.parse.urlsplit(url)
        problem = None
        if parts.scheme not in ("http", "https"):
            problem = "it must start with http:// or https://"
        elif not parts.hostname:
            problem = "it names no host"
        elif parts.query or parts.fragment:
            problem = "it may not hold a query or fragment"
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            problem = f"its port is not valid ({exc})"
        if problem:
            raise ValidationError(f"--endpoint-url: {url!r} is not a server URL; {problem}")
        return cls(
            port,
            content_type=content_type,
            accept=accept,
            timeout=timeout,
            host=str(parts.hostname),
            https=parts.scheme == "https",
            prefix=parts.path,
            custom_attributes=custom_attributes,
        )

    @property
    def url(self) -> str:
        scheme = "https" if self._https else "http"
        return f"{scheme}://{self._host}:{self._port}{self._prefix}"

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = kind(self._host, self._port, timeout=self._timeout)
            self._local.conn = conn
        return conn

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        if self._closed:
            said = f"{method} {self._prefix}{path} not sent: the instance is stopped"
            raise InvocationError(said)
        conn = self._connection()
        try:
            conn.request(method, self._prefix + path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            self._local.conn = None
            raise InvocationError(
                f"{method} {self._prefix}{path} failed: {exc or type(exc).__name__}",
                retryable=True,
            ) from exc

    def send(self, body: bytes, content_type: str | None, accept: str | None) -> tuple[int, bytes]:
        """POST one request body to /invocations; the answer's status and body, unchecked.
        A lost connection or a timeout raises a retryable InvocationError."""
        asked = {
            "Content-Type": content_type,
            "Accept": accept,
            CUSTOM_ATTRIBUTES_HEADER: self._custom_attributes,
        }
        headers = {k: v for k, v in asked.items() if v}  # C7: only what the job sets
        return self._request("POST", "/invocations", body, headers)

    def invoke(self, body: bytes) -> bytes:
        """POST one request body to /invocations with the job's headers and return the
        response body."""
        return checked_response(*self.send(body, self._content_type, self._accept))

    def ping(self) -> tuple[int, bytes]:
        """The status and body of GET /ping (C4: the container is healthy once /ping answers
        200)."""
        return self._request("GET", "/ping")

    def execution_parameters(self) -> dict[str, Any] | None:
        """The container's GET /execution-parameters (C5: the container may answer batch settings on
        /execution-parameters), or None where it has none."""
        status, data = self._request("GET", "/execution-parameters")
        if status != 200:
            return None
        try:
            params = json.loads(data)
        except ValueError:
            return None
        return params if isinstance(params, dict) else None
