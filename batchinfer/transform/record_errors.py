"""Errors of one file's transform: a failed record or a failed request (spec R19)."""

from batchinfer.errors import BatchInferError, InputError


class RecordError(InputError):
    """A file fails because of one record or one request's records (R8, R17, R19)."""

    def __init__(self, file: str, first_record: int, reason: str, last_record: int | None = None):
        self.file = file
        self.first_record = first_record
        self.last_record = last_record if last_record is not None else first_record
        self.reason = reason
        if self.last_record == first_record:
            where = f"record {first_record}"
        else:
            where = f"records {first_record}-{self.last_record}"
        super().__init__(f"{file}: {where}: {reason}")


class InvocationError(BatchInferError):
    """A request to the model failed; ``retryable`` for 5xx, timeouts and lost connections."""

    def __init__(self, reason: str, *, status: int | None = None, retryable: bool = False):
        self.reason = reason
        self.status = status
        self.retryable = retryable
        super().__init__(reason if status is None else f"HTTP {status}: {reason}")
