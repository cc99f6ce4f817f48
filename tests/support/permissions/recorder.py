"""Record every AWS call a runtime makes: a botocore event hook on every client created
while recording, and the runtime (the Lambda step, the job's role, the CLI) each call is
made on behalf of, carried across the threads a runtime starts; and the bytes each
runtime's S3 GetObject calls returned.

The harness says whose calls follow with :func:`acting_as`; calls made outside one (the
test setting up its data) are not recorded.
"""

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import botocore.session

_RUNTIME: contextvars.ContextVar[str | None] = contextvars.ContextVar("runtime", default=None)


@dataclass(frozen=True)
class Call:
    """One API call: who made it, the service and operation, and its parameters."""

    runtime: str
    service: str  # the botocore service name: s3, dynamodb, sagemaker, ...
    operation: str  # the API name: GetObject, Query, ...
    params: dict[str, Any]


@contextmanager
def acting_as(runtime: str | None) -> Iterator[None]:
    """The calls made in this block (and by threads it starts) are ``runtime``'s; None:
    the harness's own, not recorded."""
    token = _RUNTIME.set(runtime)
    try:
        yield
    finally:
        _RUNTIME.reset(token)


@dataclass
class CallRecorder:
    """While entered, every client botocore creates reports its calls into ``calls``."""

    calls: list[Call] = field(default_factory=list)
    bytes_read: dict[str, int] = field(default_factory=dict)  # runtime -> GetObject bytes

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def record(self, runtime: str, service: str, operation: str, params: dict[str, Any]) -> None:
        """Record a call the harness makes on a runtime's behalf without botocore (a task
        moto's interpreter runs itself, such as a Lambda invocation)."""
        with self._lock:
            self.calls.append(Call(runtime, service, operation, dict(params)))

    def _hook(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        runtime = _RUNTIME.get()
        if runtime is not None:
            service = model.service_model.service_name
            self.record(runtime, service, model.name, params)

    def _got(self, parsed: dict[str, Any], **_: Any) -> None:
        runtime = _RUNTIME.get()
        if runtime is not None and "ContentLength" in parsed:
            with self._lock:
                self.bytes_read[runtime] = self.bytes_read.get(runtime, 0) + parsed["ContentLength"]

    @contextmanager
    def recording(self) -> Iterator["CallRecorder"]:
        original_create = botocore.session.Session.create_client
        original_init = threading.Thread.__init__
        original_run = threading.Thread.run
        hook, got = self._hook, self._got

        def create_client(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = original_create(session, *args, **kwargs)
            client.meta.events.register("before-parameter-build", hook)
            client.meta.events.register("after-call.s3.GetObject", got)
            return client

        def thread_init(thread: threading.Thread, *args: Any, **kwargs: Any) -> None:
            original_init(thread, *args, **kwargs)
            thread._runtime_context = contextvars.copy_context()  # type: ignore[attr-defined]

        def thread_run(thread: threading.Thread) -> None:
            context = getattr(thread, "_runtime_context", None)
            if context is None:
                original_run(thread)
            else:
                context.run(original_run, thread)

        with (
            mock.patch.object(botocore.session.Session, "create_client", create_client),
            mock.patch.object(threading.Thread, "__init__", thread_init),
            mock.patch.object(threading.Thread, "run", thread_run),
        ):
            yield self
