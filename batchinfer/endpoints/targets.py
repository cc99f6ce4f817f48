"""The real-time endpoints a run of the endpoint engine may score through: the stack's
configured list, Plan's check that one is InService, and sagemaker-runtime InvokeEndpoint
as the ``send`` of :func:`batchinfer.endpoints.scoring.score_stream`.

InvokeEndpoint's answers are told apart by their error code, not their HTTP status
(throttling may come with 400): throttling and an endpoint not ready are 429, service
faults 5xx (both retried), a ModelError is the container's own answer (its
OriginalStatusCode: a 4xx refuses the records, a 5xx is retried). Any other error is a fault
of the call itself (access, validation) and is raised as it is.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from botocore.exceptions import ClientError, ReadTimeoutError
from botocore.exceptions import ConnectionError as LostConnection

from batchinfer.endpoints.scoring import Send
from batchinfer.errors import ValidationError
from batchinfer.transform.record_errors import THROTTLED, InvocationError

ENDPOINT_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
IN_SERVICE = "InService"
# Shards scored at once (ScoreShard Lambdas) unless cdk.json sets endpoint_concurrency.
DEFAULT_ENDPOINT_CONCURRENCY = 4
THROTTLING_CODES = frozenset(
    {"ThrottlingException", "ModelNotReadyException", "TooManyRequestsException"}
)
SERVER_CODES = {
    "InternalFailure": 500,
    "InternalDependencyException": 500,
    "ServiceUnavailable": 503,
}
MODEL_ERROR = "ModelError"


@dataclass(frozen=True)
class EndpointTarget:
    """An endpoint runs may score through, and optionally the production variant or
    inference component its requests go to."""

    name: str
    variant: str | None = None
    inference_component: str | None = None

    @classmethod
    def from_json(cls, raw: Any, where: str) -> "EndpointTarget":
        """An entry ``{"name", "variant"?, "inference_component"?}``; ValidationError names
        ``where`` and the key at fault."""
        if not isinstance(raw, Mapping):
            raise ValidationError(f'{where}: expected an object such as {{"name": "scorer"}}')
        known = {"name", "variant", "inference_component"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValidationError(
                f"{where}: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(known))}"
            )
        for key in sorted(known):
            value = raw.get(key)
            if (key == "name" or value is not None) and not (
                isinstance(value, str) and ENDPOINT_NAME.fullmatch(value)
            ):
                raise ValidationError(
                    f"{where}.{key}: {value!r} is not allowed; allowed: 1-63 letters, digits "
                    "and hyphens, starting with a letter or digit"
                )
        return cls(raw["name"], raw.get("variant"), raw.get("inference_component"))

    def invoke_parameters(self) -> dict[str, str]:
        """InvokeEndpoint's parameters that choose where a request goes."""
        chosen = {"EndpointName": self.name}
        if self.variant:
            chosen["TargetVariant"] = self.variant
        if self.inference_component:
            chosen["InferenceComponentName"] = self.inference_component
        return chosen


def targets_to_json(targets: tuple[EndpointTarget, ...]) -> str:
    return json.dumps([asdict(t) for t in targets])


def targets_from_json(text: str) -> tuple[EndpointTarget, ...]:
    return tuple(
        EndpointTarget.from_json(raw, f"endpoints[{i}]") for i, raw in enumerate(json.loads(text))
    )


def check_in_service(sagemaker: Any, name: str) -> None:
    """ValidationError unless endpoint ``name`` exists and is InService (DescribeEndpoint)."""
    region = sagemaker.meta.region_name
    try:
        described = sagemaker.describe_endpoint(EndpointName=name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("ValidationException", "ResourceNotFound"):
            raise ValidationError(f"endpoint: {name!r} does not exist in {region}") from None
        raise
    status = described.get("EndpointStatus")
    if status != IN_SERVICE:
        reason = described.get("FailureReason")
        raise ValidationError(
            f"endpoint: {name!r} in {region} is {status}, not {IN_SERVICE}"
            + (f" ({reason})" if reason else "")
            + "; nothing was sent"
        )


def invoke_endpoint(
    runtime: Any, target: EndpointTarget, custom_attributes: str | None = None
) -> Send:
    """The ``send`` of one shard: InvokeEndpoint through the sagemaker-runtime client
    ``runtime`` (thread-safe, as boto3 clients are), answering ``(status, body)`` as a
    model server would; ``custom_attributes`` (CustomAttributes) go with every request."""
    chosen = target.invoke_parameters()
    if custom_attributes:
        chosen["CustomAttributes"] = custom_attributes

    def send(body: bytes, content_type: str | None, accept: str | None) -> tuple[int, bytes]:
        params: dict[str, Any] = {**chosen, "Body": body}
        if content_type:
            params["ContentType"] = content_type
        if accept:
            params["Accept"] = accept
        try:
            response = runtime.invoke_endpoint(**params)
        except ClientError as exc:
            return answer_of(exc)
        except (LostConnection, ReadTimeoutError) as exc:
            raise InvocationError(f"endpoint {target.name}: {exc}", retryable=True) from None
        return 200, response["Body"].read()

    return send


def answer_of(exc: ClientError) -> tuple[int, bytes]:
    """The (status, body) an InvokeEndpoint error stands for; a fault of the call itself
    (access, validation, a missing endpoint) is raised again."""
    error = exc.response.get("Error", {})
    code, message = error.get("Code", ""), error.get("Message", "")
    if code in THROTTLING_CODES:
        return THROTTLED, f"{code}: {message}".encode()
    if code in SERVER_CODES:
        return SERVER_CODES[code], f"{code}: {message}".encode()
    if code == MODEL_ERROR:
        status = exc.response.get("OriginalStatusCode")
        original = exc.response.get("OriginalMessage") or message
        return (status if isinstance(status, int) else 424), str(original).encode()
    raise exc
