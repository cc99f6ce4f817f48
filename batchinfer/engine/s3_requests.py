"""What every S3 request of a local job shares: the client, from the user's AWS configuration,
and the URI a failed request was about, which its one-line error names."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from batchinfer.errors import InputError

_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})


def s3_client() -> Any:
    """An S3 client with the user's credentials and region (``aws configure``, ``AWS_*``
    variables, ``AWS_PROFILE``; ``AWS_ENDPOINT_URL`` for an S3-compatible store)."""
    import boto3

    return boto3.client("s3")


def not_found(exc: ClientError) -> bool:
    """Whether S3 answered that the object is not there."""
    return str(exc.response.get("Error", {}).get("Code", "")) in _NOT_FOUND


@contextmanager
def naming(uri: str) -> Iterator[None]:
    """Requests about ``uri``: an object that is not there is an InputError naming it; any
    other AWS failure carries ``uri`` as a note, which its one-line message names
    (:func:`batchinfer.cloud.aws_errors.user_error`)."""
    try:
        yield
    except ClientError as exc:
        if not_found(exc):
            raise InputError(f"{uri}: object not found") from None
        exc.add_note(uri)
        raise
    except BotoCoreError as exc:
        exc.add_note(uri)
        raise
