"""Observing the requests a boto3 S3 client makes, and answering one with an error."""

from typing import Any

from botocore.awsrequest import AWSResponse


class RequestLog:
    """API parameters of every S3 call by operation, and the bytes GetObject returned."""

    def __init__(self, client: Any) -> None:
        self.calls: dict[str, list[dict[str, Any]]] = {}
        self.bytes_read = 0
        client.meta.events.register("provide-client-params.s3.*", self._params)
        client.meta.events.register("after-call.s3.GetObject", self._got)

    def _params(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.setdefault(model.name, []).append(dict(params))

    def _got(self, parsed: dict[str, Any], **_: Any) -> None:
        self.bytes_read += parsed["ContentLength"]

    def count(self, operation: str) -> int:
        return len(self.calls.get(operation, []))


def error_response(code: str, status: int) -> tuple[AWSResponse, dict[str, Any]]:
    """What a ``before-call`` hook returns to make the client receive an S3 error."""
    parsed = {
        "Error": {"Code": code, "Message": f"injected {code}"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return AWSResponse("https://s3.amazonaws.com", status, {}, None), parsed
