"""The one place that turns botocore's exceptions into one-line errors that say what to do
(:mod:`batchinfer.errors` gives each its exit code)."""

import re
from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    CredentialRetrievalError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    SSOError,
    TokenRetrievalError,
)

from batchinfer.errors import (
    AwsError,
    AwsUnreachable,
    CredentialsMissing,
    RegionMissing,
    RunIdTaken,
    StackNotFound,
)

_CONFIGURE_CREDENTIALS = "configure credentials (aws configure / AWS_PROFILE)"
_CREDENTIAL_FAILURES = (
    NoCredentialsError,
    PartialCredentialsError,
    CredentialRetrievalError,
    TokenRetrievalError,
    SSOError,
    ProfileNotFound,
)
# Error codes AWS answers with when the credentials are not accepted.
_REFUSED_CREDENTIALS = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
        "AuthFailure",
    }
)
_ARN = re.compile(r"arn:[^'\"\s]+")


def user_error(
    exc: BotoCoreError | ClientError,
    *,
    stack: str | None = None,
    region: str | None = None,
    run_id: str | None = None,
) -> AwsError:
    """The error to report for ``exc``; ``stack``, ``region`` and ``run_id`` name what the
    call was about, when known, as does a note on ``exc`` (the S3 URI of a local job's
    request)."""
    if isinstance(exc, NoRegionError):
        return RegionMissing(
            "no AWS region: set --region or AWS_REGION (or a region in ~/.aws/config)"
        )
    if isinstance(exc, _CREDENTIAL_FAILURES):
        return CredentialsMissing(f"AWS credentials: {_line(exc)}; {_CONFIGURE_CREDENTIALS}")
    if isinstance(exc, ConnectionError | HTTPClientError):
        return AwsUnreachable(
            f"cannot reach AWS: {_line(exc)}; check the network, any proxy and --region"
        )
    about = "".join(f"{note}: " for note in getattr(exc, "__notes__", ())[-1:])
    if not isinstance(exc, ClientError):
        return AwsError(f"{about}AWS: {_line(exc)}")
    error = exc.response.get("Error", {})
    code, message = error.get("Code", "Unknown"), _line(error.get("Message", ""))
    if code in _REFUSED_CREDENTIALS:
        return CredentialsMissing(
            f"AWS credentials refused ({code}: {message}); {_CONFIGURE_CREDENTIALS}"
        )
    if exc.operation_name == "DescribeStacks" and "does not exist" in message and stack:
        where = f"region {region}" if region else "the configured region"
        return StackNotFound(
            f"stack {stack}: does not exist in {where}; check --stack (or BATCHINFER_STACK) "
            "and --region"
        )
    if code == "ExecutionAlreadyExists" and run_id:
        found = _ARN.search(message)
        execution = found.group(0) if found else "another execution"
        return RunIdTaken(
            f"run id {run_id} already used by execution {execution}; choose another "
            "--run-id or leave it out"
        )
    return AwsError(f"{about}AWS {exc.operation_name}: {code}: {message}")


@contextmanager
def aws_errors(
    *, stack: str | None = None, region: str | None = None, run_id: str | None = None
) -> Iterator[None]:
    """Raise :func:`user_error` for botocore's exceptions in the block (or the decorated
    function); every other exception passes through."""
    try:
        yield
    except (BotoCoreError, ClientError) as exc:
        raise user_error(exc, stack=stack, region=region, run_id=run_id) from None


def _line(value: object) -> str:
    return " ".join(str(value).split())
