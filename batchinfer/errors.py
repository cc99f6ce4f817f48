"""Errors a user can act on. Each message names the file, record, field or key at fault.

Each class has the exit code the CLI ends with when it reports one (0 is success):

==  ===================================================================================
1   any other error: a file or a run failed, a stack without batchinfer outputs
2   a setting, argument or request key is invalid (also command-line usage errors)
3   input data cannot be processed as asked
4   no AWS region is set
5   no usable AWS credentials
6   AWS cannot be reached (network, proxy, endpoint)
7   the stack does not exist in the region
8   the run id is already used by another execution
9   any other error AWS returned (its code and message are shown)
==  ===================================================================================
"""


class BatchInferError(Exception):
    """Base of every error the CLI reports as a message rather than a traceback."""

    exit_code = 1


class ValidationError(BatchInferError):
    """A setting, argument or request key is invalid (checked before any work starts)."""

    exit_code = 2


class OutputNotEmpty(ValidationError):
    """The output folder holds files the job did not write (``--overwrite``, ``--resume``)."""


class InputError(BatchInferError):
    """Input data cannot be processed as asked: empty, missing, changed while being read."""

    exit_code = 3


class AwsError(BatchInferError):
    """An AWS call failed; the subclasses are the failures a user fixes on their side."""

    exit_code = 9


class RegionMissing(AwsError):
    exit_code = 4


class CredentialsMissing(AwsError):
    """No credentials, incomplete or expired ones, or an unknown profile."""

    exit_code = 5


class AwsUnreachable(AwsError):
    exit_code = 6


class StackNotFound(AwsError):
    exit_code = 7


class RunIdTaken(AwsError):
    """A Step Functions execution already has the run id as its name."""

    exit_code = 8
