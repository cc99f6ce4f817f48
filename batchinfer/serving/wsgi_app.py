"""The WSGI application of the model server: ``/ping``, ``/invocations``, ``/execution-parameters``.

Spec C3-C5 (the container's HTTP endpoints) and C9: the container ignores headers it does not know.
Every request is answered: a bad request gets a 4xx with a message naming what is wrong, a failing
model a 500 with the exception, and the worker lives on. Error bodies are plain UTF-8 text.
"""

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from batchinfer.serving.handlers import InferenceHandler
from batchinfer.serving.loaded_workers import LoadedWorkers
from batchinfer.serving.server_errors import RequestError, error_answer
from batchinfer.transform.server_limits import ServerLimits
from batchinfer.units import MIB

LOG = logging.getLogger(__name__)
_READ_CHUNK = 4 * MIB
_RUN_CHUNK = MIB  # the parts of a body answered as it is read (InferenceHandler.answer_runs)
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    500: "Internal Server Error",
    503: "Service Unavailable",
}

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


class InferenceApp:
    """The WSGI callable around one loaded :class:`InferenceHandler`."""

    def __init__(
        self, handler: InferenceHandler, limits: ServerLimits, loaded: LoadedWorkers
    ) -> None:
        self.handler = handler
        self.limits = limits
        self.loaded = loaded

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        routes = {
            "/ping": ("GET", self._ping),
            "/execution-parameters": ("GET", self._execution_parameters),
            "/invocations": ("POST", self._invocations),
        }
        if path not in routes:
            return _reply(start_response, 404, f"no such path {path!r}".encode())
        allowed, route = routes[path]
        if method != allowed and not (method == "HEAD" and allowed == "GET"):
            return _reply(
                start_response, 405, f"{path} accepts {allowed} only".encode(), ("Allow", allowed)
            )
        try:
            status, body, content_type = route(environ)
        except RequestError as exc:
            LOG.warning("%s %s -> %d: %s", method, path, exc.status, exc.message)
            (status, body), content_type = error_answer(exc), None
        except Exception as exc:
            LOG.exception("%s %s -> 500", method, path)
            (status, body), content_type = error_answer(exc), None
        return _reply(start_response, status, body, ("Content-Type", content_type))

    def _ping(self, environ: dict[str, Any]) -> tuple[int, bytes, str]:
        waiting = self.loaded.waiting()  # C4: a job's requests come once this is 200
        return (503, waiting.encode(), "text/plain") if waiting else (200, b"", "text/plain")

    def _execution_parameters(self, environ: dict[str, Any]) -> tuple[int, bytes, str]:
        return 200, json.dumps(self.limits.execution_parameters()).encode(), "application/json"

    def _invocations(self, environ: dict[str, Any]) -> tuple[int, bytes, str]:
        request = (
            environ.get("CONTENT_TYPE") or None,
            environ.get("HTTP_ACCEPT") or None,
            environ.get("HTTP_X_AMZN_SAGEMAKER_CUSTOM_ATTRIBUTES") or None,
        )
        limit = self.limits.max_body_bytes
        if not self.handler.reads_in_runs(*request):
            body = b"".join(_body_parts(environ, limit, None))
            return 200, *self.handler.invoke(body, *request)
        try:  # answered as it is read: a worker holds a run of the body, not all of it
            return 200, *self.handler.answer_runs(_body_parts(environ, limit, _RUN_CHUNK), *request)
        finally:
            _drain(environ["wsgi.input"])  # the rest of a body refused part way


def _body_parts(environ: dict[str, Any], limit: int | None, chunk: int | None) -> Iterator[bytes]:
    """The request body in parts of ``chunk`` bytes (None: in one part when its length is
    given); 413 (after draining it) when it is over ``limit`` bytes."""
    stream = environ["wsgi.input"]
    length_header = environ.get("CONTENT_LENGTH") or ""
    length = None
    if length_header.strip():
        try:
            length = int(length_header)
        except ValueError:
            raise RequestError(400, f"Content-Length {length_header!r} is not a number") from None
        if limit is not None and length > limit:
            _drain(stream)
            raise _too_large(length, limit)
    size = 0
    while length is None or size < length:
        want = length - size if length is not None else _READ_CHUNK
        part = stream.read(want if chunk is None else min(chunk, want))
        if not part:
            return
        size += len(part)
        if limit is not None and size > limit:
            _drain(stream)
            raise _too_large(size, limit, at_least=True)
        yield part


def _drain(stream: Any) -> None:
    """Consume the rest of a refused body so the client reads the answer, not a reset."""
    while stream.read(_READ_CHUNK):
        pass


def _too_large(size: int, limit: int, *, at_least: bool = False) -> RequestError:
    more = "at least " if at_least else ""
    return RequestError(
        413,
        f"request body of {more}{size} bytes is over MaxPayloadInMB={limit // MIB} "
        f"({limit} bytes); send smaller mini-batches",
    )


def _reply(
    start_response: StartResponse, status: int, body: bytes, *headers: tuple[str, str | None]
) -> list[bytes]:
    content_type = next((v for k, v in headers if k == "Content-Type" and v), None)
    header_list = [(k, v) for k, v in headers if k != "Content-Type" and v]
    header_list.append(("Content-Type", content_type or "text/plain; charset=utf-8"))
    header_list.append(("Content-Length", str(len(body))))
    start_response(f"{status} {_REASONS.get(status, 'Error')}", header_list)
    return [body]
