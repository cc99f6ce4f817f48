"""The errors that end a run from inside the pipeline's steps. Their class names are the
``Error`` a Lambda task fails with, which the failure recorder reads back to tell how the
run ended."""

from batchinfer.errors import BatchInferError, InputError


class ShardsMissing(BatchInferError):
    """Shards still lack a valid output after the last job round."""


class JobStopped(BatchInferError):
    """A job was stopped from outside the pipeline: the run stops too (ABORTED)."""


class DataFailure(InputError):
    """A job failed because of the data (the container refused records, SageMaker says
    ClientError): another round would fail the same way and be billed again."""


class InstancesUnavailable(BatchInferError):
    """The run could not lease its instances: it waited longer than admission allows, or it
    asks for more than the whole budget of its instance type."""


class EndpointUnavailable(BatchInferError):
    """The endpoint kept throttling or failing (5xx) past the retries of one invocation:
    the Map retries the shard, which continues from its last saved position."""


class MapItemFailed(BatchInferError):
    """A child execution of a Distributed Map failed (a split, a shard's check or scoring):
    the error names its item and the child's own error and cause, which the Map's failure
    does not carry."""
