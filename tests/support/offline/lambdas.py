"""The template's Lambda functions run in-process by their real handlers in ``lambda/``,
answering as the Lambda service does, with service errors injected on demand."""

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from unittest import mock

from botocore.client import BaseClient

from tests.support.lambdas import load_handler
from tests.support.offline.template import Function


@dataclass(frozen=True)
class LambdaFault:
    """The next invocation of ``step`` (its handler module) fails with ``error`` as the
    Lambda service reports it: ``before`` the handler runs, or ``after`` it ran (its answer
    lost, as with a Lambda.ServiceException on the way back), or answers ``answer``
    instead of the handler's result (``when="answer"``)."""

    step: str
    when: str = "after"
    error: str = "Lambda.ServiceException"
    answer: Any = None


@dataclass(frozen=True)
class Dies:
    """The next invocation of ``step`` dies right after its AWS call ``after_call``
    (``service.Operation``) succeeded, as a function out of memory or out of time does:
    the task fails with Lambda.Unknown."""

    step: str
    after_call: str


class _Died(Exception):
    pass


@contextmanager
def _dying(fault: Dies) -> Iterator[None]:
    """While entered, the calling thread's first ``fault.after_call`` raises _Died once it
    has succeeded (other threads' calls go through)."""
    original = BaseClient._make_api_call
    thread, armed = threading.get_ident(), [True]

    def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        result = original(client, operation, params)
        called = f"{client.meta.service_model.service_name}.{operation}"
        if armed[0] and threading.get_ident() == thread and called == fault.after_call:
            armed[0] = False
            raise _Died(called)
        return result

    with mock.patch.object(BaseClient, "_make_api_call", call):
        yield


@dataclass(frozen=True)
class OutOfTime:
    """The next invocation of ``step`` runs out of time: its context reports the
    function's whole timeout left for the first ``asks`` questions, then 1 second."""

    step: str
    asks: int


class LambdaContext:
    """The context a handler is given: ``get_remaining_time_in_millis`` counts down from
    the function's timeout (or, with :class:`OutOfTime`, drops after some asks)."""

    def __init__(self, timeout_seconds: int, short: OutOfTime | None = None) -> None:
        self._deadline = time.monotonic() + timeout_seconds
        self._asks_left = short.asks if short is not None else None
        self._lock = threading.Lock()

    def get_remaining_time_in_millis(self) -> int:
        with self._lock:
            if self._asks_left is not None:
                if self._asks_left <= 0:
                    return 1000
                self._asks_left -= 1
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class Lambdas:
    """The template's functions, run in-process by their real handlers."""

    def __init__(
        self,
        functions: dict[str, Function],
        *,
        as_role: Callable[[str], AbstractContextManager[Any]] = lambda _arn: nullcontext(),
        on_invoke: Callable[[str], None] = lambda _arn: None,
    ) -> None:
        self.functions = functions
        self.as_role = as_role  # whose calls the handler makes: its function's role
        self.on_invoke = on_invoke  # a task of the state machine invokes function ARN
        self.modules: dict[str, ModuleType] = {}
        self.invocations: list[tuple[str, Any]] = []  # (handler module, event)
        self.seconds: dict[str, float] = {}  # handler module -> seconds its handler ran
        self.faults: list[LambdaFault | OutOfTime | Dies] = []
        self._lock = threading.Lock()

    def environment(self) -> dict[str, str]:
        """The variables of every function (they must agree: one process runs them all)."""
        merged: dict[str, str] = {}
        for function in self.functions.values():
            for key, value in function.environment.items():
                if merged.setdefault(key, value) != value:
                    raise AssertionError(f"functions disagree on the environment variable {key}")
        return merged

    def invoke(self, parameters: dict, region: str, state_credentials: Any) -> dict:
        """What ``lambda_client.invoke(**parameters)`` answers, as moto's parser reads it
        (a task of the state machine invoking the function)."""
        self.on_invoke(parameters["FunctionName"])
        return self._invoke(parameters)

    def _invoke(self, parameters: dict) -> dict:
        function = self.functions[parameters["FunctionName"].split(":function:")[-1]]
        module_name, attribute = function.handler.rsplit(".", 1)
        event = json.loads(parameters.get("Payload") or b"{}")
        with self._lock:
            self.invocations.append((module_name, event))
            if module_name not in self.modules:
                self.modules[module_name] = load_handler(module_name)
            fault = next((f for f in self.faults if f.step == module_name), None)
            if fault is not None:
                self.faults.remove(fault)
        handler: Callable[[Any, Any], Any] = getattr(self.modules[module_name], attribute)
        short = fault if isinstance(fault, OutOfTime) else None
        dies = fault if isinstance(fault, Dies) else None
        fault = fault if isinstance(fault, LambdaFault) else None
        if fault is not None and fault.when == "before":
            return _service_error(fault.error)
        start = time.perf_counter()
        context = LambdaContext(function.timeout_seconds, short)
        try:
            with self.as_role(function.role), _dying(dies) if dies else nullcontext():
                result = handler(event, context)
        except _Died:
            return _service_error("Lambda.Unknown")
        except Exception as exc:  # Lambda reports every exception of a handler this way
            payload = {"errorMessage": str(exc), "errorType": type(exc).__name__}
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": payload}
        finally:
            with self._lock:
                ran = time.perf_counter() - start
                self.seconds[module_name] = self.seconds.get(module_name, 0.0) + ran
        if fault is not None:
            if fault.when == "answer":
                return {"StatusCode": 200, "Payload": fault.answer}
            return _service_error(fault.error)
        # Lambda serialises the result: anything json cannot encode is an error there too.
        return {"StatusCode": 200, "Payload": json.loads(json.dumps(result))}

    def call(self, arn: str, event: dict[str, Any]) -> dict[str, Any]:
        """A synchronous invocation by a Lambda service poller (an event source mapping):
        the response, with ``FunctionError`` when the handler raised."""
        return self._invoke({"FunctionName": arn, "Payload": json.dumps(event)})

    def invoke_event(
        self,
        arn: str,
        event: dict[str, Any],
        *,
        retries: int = 0,
        on_failure: Callable[[dict[str, Any]], None] | None = None,
    ) -> Any:
        """An asynchronous invocation (an EventBridge target): the handler's result. As
        Lambda does, an invocation that fails is tried ``retries`` more times; then its
        invocation record goes to ``on_failure`` (the function's on-failure destination,
        sent with the function's role), or, without one, the failure is raised.
        https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html"""
        for _ in range(1 + retries):
            response = self._invoke({"FunctionName": arn, "Payload": json.dumps(event)})
            if not response.get("FunctionError"):
                return response["Payload"]
        if on_failure is None:
            raise AssertionError(f"{arn} failed on {event['detail-type']}: {response['Payload']}")
        record = {
            "version": "1.0",
            "requestContext": {
                "functionArn": f"{arn}:$LATEST",
                "condition": "RetriesExhausted",
                "approximateInvokeCount": 1 + retries,
            },
            "requestPayload": event,
            "responseContext": {"statusCode": 200, "functionError": response["FunctionError"]},
            "responsePayload": response["Payload"],
        }
        with self.as_role(self.functions[arn.split(":function:")[-1]].role):
            on_failure(record)
        return None

    def events_of(self, module_name: str) -> list[Any]:
        """The events the handler module ``module_name`` was invoked with, in order."""
        return [event for name, event in self.invocations if name == module_name]


def _service_error(error: str) -> dict[str, Any]:
    """An invocation the Lambda service failed: the task fails with ``error``."""
    payload = {"errorType": error, "errorMessage": "injected by the offline harness"}
    return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": payload}
