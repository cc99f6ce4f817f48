"""Where the SDK's local mode departs from the platform's rules (docs/platform.md), as
found in sagemaker-core 2.27.0. Each test that meets one names it; docs/oracle.md lists them.
"""

from dataclasses import dataclass

SDK = "sagemaker-core 2.27.0"


@dataclass(frozen=True)
class Departure:
    """One place the SDK's local transform job differs from the platform."""

    rule: str
    source: str  # file and function in the SDK
    reason: str  # one line: what the SDK does instead
    correction: str  # what the oracle does about it

    def __str__(self) -> str:
        return f"{self.rule}, {SDK} {self.source}: {self.reason}"


MULTI_RECORD_SIZE = Departure(
    "R7",
    "sagemaker/core/local/data.py: _payload_size_within_limit",
    "sizes a MultiRecord batch with sys.getsizeof(str) < limit: 49 bytes of object overhead "
    "and a strict bound, so a batch of exactly MaxPayloadInMB MiB is cut one record early",
    "byte_sized_batches() measures the request body's bytes, <= the limit",
)
EXECUTION_PARAMETERS = Departure(
    "R10",
    "sagemaker/core/local/data.py: get_batch_strategy_instance (from _LocalTransformJob.start)",
    "takes BatchStrategy from /execution-parameters but accepts only MultiRecord and "
    "SingleRecord, so a container answering MULTI_RECORD (as batchinfer's does) fails the job",
    "every compared job sets BatchStrategy itself",
)
NEWLINES = Departure(
    "R6",
    "sagemaker/core/local/data.py: LineSplitter.split",
    "opens the file in text mode: universal newlines end a record at \\r as well as \\n and "
    "rewrite \\r\\n and \\r to \\n",
    "none: compared against the rule, the SDK's bytes are checked to be the rewritten ones",
)
ASSEMBLE_LINE = Departure(
    "R13",
    "sagemaker/core/local/entities.py: _LocalTransformJob._perform_batch_inference",
    "writes \\n after every response with AssembleWith Line, also after one that already "
    "ends in \\n",
    "the SDK's recorded responses are assembled by the rule and compared with batchinfer",
)
GZIP = Departure(
    "R11",
    "sagemaker/core/local/entities.py: _LocalTransformJob._prepare_data_transformation",
    "ignores CompressionType: the gzip bytes are split and sent as they are (text mode: "
    "UnicodeDecodeError)",
    "the SDK is given the decompressed bytes under the same object name",
)
NESTED_FILES = Departure(
    "R4, R12",
    "sagemaker/core/local/data.py: LocalFileDataSource.get_file_list",
    "lists only the files directly in the input directory; objects in sub-folders (file:// "
    "or downloaded from an S3 prefix) are never transformed",
    "one SDK job per sub-folder, writing to the same sub-folder of the output",
)
S3_OUTPUT_PREFIX = Departure(
    "R12",
    "sagemaker/core/local/utils.py: move_to_destination",
    "uploads S3 outputs under <S3OutputPath>/<job name>/ instead of <S3OutputPath>/",
    "the SDK's outputs are read from below the job name",
)
DATA_PROCESSING = Departure(
    "R15-R18",
    "sagemaker/core/local/entities.py: _LocalTransformJob.start",
    "ignores DataProcessing (InputFilter, JoinSource, OutputFilter): records are sent whole "
    "and predictions written as they come",
    "the SDK transforms the filtered records; the join and OutputFilter are applied per "
    "record to its predictions with the csv and json modules",
)
FAILED_RECORDS = Departure(
    "R19",
    "sagemaker/core/local/local_session.py: LocalSagemakerRuntimeClient.invoke_endpoint",
    "never looks at the status code: a record the model refuses has the error body written "
    "into the output in its place, and the job completes",
    "only the files without a refused record are compared",
)

ALL = (
    MULTI_RECORD_SIZE,
    EXECUTION_PARAMETERS,
    NEWLINES,
    ASSEMBLE_LINE,
    GZIP,
    NESTED_FILES,
    S3_OUTPUT_PREFIX,
    DATA_PROCESSING,
    FAILED_RECORDS,
)
