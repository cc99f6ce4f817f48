"""SageMaker Batch Transform semantics for one file, independent of how the model is called.

Standard library only: the local engine, the processing container and the Plan Lambda use it.
"""

from batchinfer.transform.assemble import assemble, output_name
from batchinfer.transform.file_transform import FileStats, transform_file, transform_stream
from batchinfer.transform.record_errors import InvocationError, RecordError
from batchinfer.transform.retry import Invoke
from batchinfer.transform.settings import EffectiveSettings, TransformSettings, validate_job_name

__all__ = [
    "EffectiveSettings",
    "FileStats",
    "InvocationError",
    "Invoke",
    "RecordError",
    "TransformSettings",
    "assemble",
    "output_name",
    "transform_file",
    "transform_stream",
    "validate_job_name",
]
