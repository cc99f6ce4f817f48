"""sagemaker-runtime InvokeEndpoint offline: each endpoint is a real model server (a
``batchinfer serve`` on localhost) behind the boto3 call, with throttling injected on
demand.

While :meth:`Endpoints.intercepting` is open, every sagemaker-runtime client answers
InvokeEndpoint itself (a botocore ``before-call`` hook, so no request reaches moto): the
Body, ContentType, Accept and CustomAttributes (as the container receives them: the
X-Amzn-SageMaker-Custom-Attributes header) go to ``<server>/invocations``; a 2xx answer is
InvokeEndpoint's response, any other the ModelError SageMaker answers (HTTP 424 with
OriginalStatusCode and OriginalMessage). :meth:`Endpoints.create` also makes the endpoint in
moto's SageMaker, so DescribeEndpoint finds it InService.
"""

import io
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import botocore.session
from botocore.awsrequest import AWSResponse
from botocore.response import StreamingBody

from tests.support.offline.template import ACCOUNT, REGION

SERVER_TIMEOUT = 60.0  # C8
_PARAMS = "offline_invoke_params"


@dataclass(frozen=True)
class Throttle:
    """The next ``count`` InvokeEndpoint calls are throttled: ``code`` with HTTP
    ``status`` (InvokeEndpoint may answer throttling with 400)."""

    count: int
    code: str = "ThrottlingException"
    status: int = 400


@dataclass(frozen=True)
class Invocation:
    """One InvokeEndpoint call as the endpoint saw it, and the HTTP status it answered."""

    endpoint: str
    body: bytes
    status: int


class Endpoints:
    """The offline endpoints by name (``servers``: name -> server URL), the calls they
    answered (``calls``) and the faults still to inject (``faults``)."""

    def __init__(self, sagemaker: Any) -> None:
        self.sagemaker = sagemaker
        self.servers: dict[str, str] = {}
        self.calls: list[Invocation] = []
        self.faults: list[Throttle] = []
        self._throttles_left = 0
        self._throttle: Throttle | None = None
        self._lock = threading.Lock()

    def create(self, name: str, url: str) -> None:
        """Endpoint ``name`` (InService in moto's SageMaker) served by the server at ``url``."""
        model, config = f"{name}-model", f"{name}-config"
        self.sagemaker.create_model(
            ModelName=model,
            ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/{name}",
            PrimaryContainer={"Image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/m:1"},
        )
        self.sagemaker.create_endpoint_config(
            EndpointConfigName=config,
            ProductionVariants=[
                {
                    "VariantName": "AllTraffic",
                    "ModelName": model,
                    "InitialInstanceCount": 1,
                    "InstanceType": "ml.m5.large",
                }
            ],
        )
        self.sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=config)
        self.servers[name] = url

    @contextmanager
    def intercepting(self) -> Iterator["Endpoints"]:
        original_create = botocore.session.Session.create_client

        def create_client(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = original_create(session, *args, **kwargs)
            if client.meta.service_model.service_name == "sagemaker-runtime":
                events = client.meta.events
                events.register("before-parameter-build.sagemaker-runtime.InvokeEndpoint", _keep)
                events.register("before-call.sagemaker-runtime.InvokeEndpoint", self._answer)
            return client

        with mock.patch.object(botocore.session.Session, "create_client", create_client):
            yield self

    def _answer(self, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        params = context[_PARAMS]
        name = params["EndpointName"]
        with self._lock:
            if not self._throttles_left and self.faults:
                self._throttle = self.faults.pop(0)
                self._throttles_left = self._throttle.count
            throttle = self._throttle if self._throttles_left else None
            if throttle is not None:
                self._throttles_left -= 1
        body = params.get("Body", b"")
        body = body.encode() if isinstance(body, str) else body
        if throttle is not None:
            answer = _error(throttle.status, throttle.code, "Rate exceeded")
        elif name not in self.servers:
            answer = _error(
                400, "ValidationError", f"Endpoint {name} of account {ACCOUNT} not found."
            )
        else:
            answer = self._forward(self.servers[name], body, params)
        with self._lock:
            self.calls.append(Invocation(name, body, answer[0].status_code))
        return answer

    def _forward(
        self, url: str, body: bytes, params: dict[str, Any]
    ) -> tuple[AWSResponse, dict[str, Any]]:
        headers = {
            header: params[key]
            for header, key in (
                ("Content-Type", "ContentType"),
                ("Accept", "Accept"),
                ("X-Amzn-SageMaker-Custom-Attributes", "CustomAttributes"),
            )
            if params.get(key)
        }
        request = urllib.request.Request(
            f"{url}/invocations", data=body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=SERVER_TIMEOUT) as response:
                status, data = response.status, response.read()
                content_type = response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            status, data, content_type = exc.code, exc.read(), ""
        if 200 <= status < 300:
            parsed = {
                "Body": StreamingBody(io.BytesIO(data), len(data)),
                "ContentType": content_type,
                "InvokedProductionVariant": params.get("TargetVariant", "AllTraffic"),
                "ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}},
            }
            return AWSResponse(url, 200, {}, None), parsed
        message = data.decode("utf-8", "replace")
        kind = "client" if status < 500 else "server"
        http, parsed = _error(
            424,
            "ModelError",
            f'Received {kind} error ({status}) from primary with message "{message}".',
        )
        parsed |= {"OriginalStatusCode": status, "OriginalMessage": message}
        return http, parsed


def _keep(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    """Keep the call's parameters for the before-call hook (which sees them serialized)."""
    context[_PARAMS] = dict(params)


def _error(status: int, code: str, message: str) -> tuple[AWSResponse, dict[str, Any]]:
    parsed = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}},
    }
    return AWSResponse("offline", status, {}, None), parsed
