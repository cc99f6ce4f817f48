"""Errors of the model server: bad requests, models that cannot load, servers that do not start."""

from batchinfer.errors import BatchInferError, InputError


class RequestError(InputError):
    """A request the server refuses, with the HTTP status to answer (400, 406, 413, 415)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_answer(exc: Exception) -> tuple[int, bytes]:
    """The status and body a request that raised ``exc`` gets: a RequestError's own status,
    500 with the exception's type and text for anything else."""
    if isinstance(exc, RequestError):
        return exc.status, exc.message.encode()
    return 500, f"{type(exc).__name__}: {exc}".encode()


class ModelLoadError(BatchInferError):
    """The model directory holds no model (or user module) that can be loaded; says why."""


# How the server's log begins the one line that says why the model did not load.
MODEL_LOAD_FAILED = "the model cannot be loaded"


class ServerStartError(BatchInferError):
    """A model server process died or never became healthy; the message ends with its log."""
