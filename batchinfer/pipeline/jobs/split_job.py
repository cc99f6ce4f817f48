"""Which splitter takes an input object, and the ``batchinfer split`` job that takes the
large ones.

The SplitObject Lambda has 900 s. A plain object is cut by ranged reads near the cuts and
UploadPartCopy (S3 copies the bytes), so its time does not grow with its size; a gzip
object is decompressed and re-compressed in the splitter itself, at about
:data:`GZIP_EXPANSION` times its size. Objects whose streamed bytes are above the stack's
threshold are split by a SageMaker Processing job in the project's image, whose
container runs ``batchinfer split`` (the same :func:`batchinfer.sharding.split` the Lambda
calls) and writes the same shard index (docs/scaling.md).
"""

from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.state import SplitTask
from batchinfer.pipeline.jobs.job_requests import GZIP_EXPANSION, MAX_CONTAINER_ARGUMENT

LAMBDA = "lambda"
JOB = "job"
SPLITTERS = (LAMBDA, JOB)
SPLIT_ENTRYPOINT = ["batchinfer", "split"]
# A split job reads and writes S3 itself: its storage volume holds nothing of the data.
SPLIT_VOLUME_GB = 1
# The split job's name: ``<job base>-s-<8 hex digits>``, new per attempt (R1: a request outside
# CreateTransformJob's limits is refused), within the 63 characters a job base leaves room for
# (job_names.MAX_BASE_LENGTH).
SPLIT_NAME_MARK = "s"


def streamed_bytes(size: int, *, gzip: bool) -> int:
    """The bytes a split of an object of ``size`` passes through its own CPU: the
    decompressed data of a gzip object (taken as ``GZIP_EXPANSION`` times its size), none
    of a plain one (S3 copies its shards server-side)."""
    return size * GZIP_EXPANSION if gzip else 0


def is_gzip(key: str, compression_type: str) -> bool:
    """Whether the splitter reads the object as gzip (as :func:`batchinfer.sharding.split`
    decides: CompressionType Gzip, or a ``.gz`` name)."""
    return compression_type == "Gzip" or key.endswith(".gz")


def choose_splitter(size: int, *, gzip: bool, threshold: int | None) -> str:
    """:data:`JOB` when the object's streamed bytes are above ``threshold`` (None: never)."""
    if threshold is None or streamed_bytes(size, gzip=gzip) <= threshold:
        return LAMBDA
    return JOB


def split_arguments(task: SplitTask) -> list[str]:
    """The ``batchinfer split`` arguments of ``task`` (after :data:`SPLIT_ENTRYPOINT`);
    ValidationError naming the object when one is longer than a container argument may be."""
    arguments = [task.input, "--output", task.output]
    if task.shards is not None:
        arguments += ["--shards", str(task.shards)]
    if task.shard_size is not None:
        arguments += ["--shard-size", str(task.shard_size)]
    if task.header:
        arguments.append("--header")
    if task.header_sha256 is not None:
        arguments += ["--header-sha256", task.header_sha256]
    arguments += ["--compression-type", task.compression_type]
    for argument in arguments:
        if len(argument) > MAX_CONTAINER_ARGUMENT:
            raise ValidationError(
                f"{task.input}: its split job would take {argument!r} ({len(argument)} "
                f"characters) as a container argument; SageMaker allows "
                f"{MAX_CONTAINER_ARGUMENT}. Use a shorter key for this object"
            )
    return arguments


def with_splitter(task: SplitTask, splitter: str, *, run_id: str, job_base: str) -> SplitTask:
    """``task`` to be split by ``splitter``: a job's task also carries what the state
    machine's CreateProcessingJob takes from it (name base, run id, arguments)."""
    if splitter == LAMBDA:
        return SplitTask(**{**task.to_state(), "splitter": LAMBDA})
    job = {"base": job_base, "run_id": run_id, "arguments": split_arguments(task)}
    return SplitTask(**{**task.to_state(), "splitter": JOB, "job": job})
