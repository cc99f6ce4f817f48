"""Errors of one file's transform: a failed record or a failed request (spec R19: a file with any
failed record gets no output), and the answer of a request told apart from its failure."""

from batchinfer.errors import BatchInferError, InputError

EXCERPT_BYTES = 500  # of an error answer's body, quoted in its error
THROTTLED = 429


class RecordError(InputError):
    """A file fails because of one record or one request's records (R8: a record larger than
    MaxPayloadInMB fails its file; R17: a CSV join adds the prediction to its row, one line per
    record; R19)."""

    def __init__(self, file: str, first_record: int, reason: str, last_record: int | None = None):
        self.file = file
        self.first_record = first_record
        self.last_record = last_record if last_record is not None else first_record
        self.reason = reason
        super().__init__(f"{file}: {record_range(first_record, self.last_record)}: {reason}")


def record_range(first: int, last: int) -> str:
    """``record 3``, or ``records 3-9``."""
    return f"record {first}" if last == first else f"records {first}-{last}"


class InvocationError(BatchInferError):
    """A request to the model failed; ``retryable`` for 5xx, timeouts and lost connections."""

    def __init__(self, reason: str, *, status: int | None = None, retryable: bool = False):
        self.reason = reason
        self.status = status
        self.retryable = retryable
        super().__init__(reason if status is None else f"HTTP {status}: {reason}")


def checked_response(status: int, body: bytes, *, retry_throttling: bool = False) -> bytes:
    """The body of a 2xx answer; otherwise an InvocationError quoting the start of the body,
    retryable for 5xx (R20: ModelClientConfig bounds timeouts and retries) and, with
    ``retry_throttling``, for 429."""
    if not 200 <= status < 300:
        detail = body[:EXCERPT_BYTES].decode("utf-8", "replace").strip()
        retryable = status >= 500 or (retry_throttling and status == THROTTLED)
        raise InvocationError(detail, status=status, retryable=retryable)
    return body
