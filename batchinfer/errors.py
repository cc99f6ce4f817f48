"""Errors a user can act on. Each message names the file, record, field or key at fault."""


class BatchInferError(Exception):
    """Base of every error the CLI reports as a message rather than a traceback."""

    exit_code = 1


class ValidationError(BatchInferError):
    """A setting, argument or request key is invalid (checked before any work starts)."""

    exit_code = 2


class InputError(BatchInferError):
    """Input data cannot be processed as asked: empty, missing, changed while being read."""

    exit_code = 3
