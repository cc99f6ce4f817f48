"""Where a run keeps its objects in the data bucket.

``input/`` is where users drop data; a run's shards go to ``shards/<run id>/`` (expired by
a lifecycle rule), its bookkeeping (input list, manifests, Map results) to
``runs/<run id>/``, and its results to ``output/<run id>/`` unless the request names an
output prefix.
"""

from dataclasses import dataclass

from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.job_names import MAX_JOB_NAME_LENGTH
from batchinfer.sharding.names import MAX_SHARDS, index_name, manifest_name, shard_name
from batchinfer.transform.assemble import output_name
from batchinfer.uris import S3Location

INPUT_PREFIX = "input/"
SHARDS_PREFIX = "shards/"
RUNS_PREFIX = "runs/"
OUTPUT_PREFIX = "output/"
# Step Functions writes the Maps' results below this prefix (one folder per Map run).
MAP_RESULTS_PREFIX = "runs/_map-results/"
# How it writes them (the ResultWriter's WriterConfig): one line a child, a succeeded child
# as its output alone, a failed one with its Input, Error and Cause.
MAP_RESULTS_FORMAT = {"OutputType": "JSONL", "Transformation": "COMPACT"}
INPUTS_FILE = "inputs.jsonl"  # JSON Lines: one split task per input object
SHARDS_FILE = "shards.jsonl"  # JSON Lines: one shard a line, the first round's Map items
ENVIRONMENT_FILE = "environment.json"
# S3 takes a key of at most 1,024 bytes of UTF-8, whatever its length in characters
# (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
MAX_KEY_BYTES = 1024


@dataclass(frozen=True)
class RunLayout:
    bucket: str
    run_id: str

    @property
    def shards(self) -> S3Location:
        return S3Location(self.bucket, f"{SHARDS_PREFIX}{self.run_id}/")

    @property
    def artefacts(self) -> S3Location:
        return S3Location(self.bucket, f"{RUNS_PREFIX}{self.run_id}/")

    @property
    def default_output(self) -> S3Location:
        return S3Location(self.bucket, f"{OUTPUT_PREFIX}{self.run_id}/")

    @property
    def inputs(self) -> S3Location:
        return self.artefacts.child(INPUTS_FILE)

    @property
    def environment(self) -> S3Location:
        """The container environment the request set (kept out of the state)."""
        return self.artefacts.child(ENVIRONMENT_FILE)

    @property
    def shard_list(self) -> S3Location:
        return self.artefacts.child(SHARDS_FILE)

    @property
    def parts(self) -> S3Location:
        """Where jobs write per-shard outputs of a run whose outputs are merged."""
        return self.artefacts.child("parts/")

    def round_manifest(self, round_number: int) -> S3Location:
        return self.artefacts.child(f"round-{round_number}.manifest")

    def round_shards(self, round_number: int) -> S3Location:
        """The shards a round's jobs run (JSON Lines, the CountShards Map's items): round 1
        runs every shard (the shard list), a later one those the round before left
        missing."""
        if round_number == 1:
            return self.shard_list
        return self.artefacts.child(f"round-{round_number}.shards.jsonl")

    def scoring(self, job: str) -> S3Location:
        """The endpoint engine's folder of one attempt ``job``: each shard's saved progress
        and unsent output tail (``progress/<shard>.json``, ``.tail``) and its data failures
        (``failures/``)."""
        return self.artefacts.child(f"endpoint/{job}/")

    def scoring_failures(self, job: str) -> S3Location:
        """The data failures of attempt ``job``'s shards: one ``<shard>.json`` per shard the
        endpoint refused."""
        return self.scoring(job).child("failures/")

    def object_keys(
        self, relative: str, output: S3Location, *, merge: bool, endpoint: bool
    ) -> dict[str, str]:
        """The keys a run writes for its input object at ``relative`` (its path under the
        input's folder), by what each is: its shards and their index and manifest, each
        shard's output (under ``parts/`` when merged), the merged output, and with the
        endpoint engine each shard's saved progress (of an attempt with the longest job
        name). The last shard's number stands for all: they are as long."""
        folder, _, name = relative.rpartition("/")
        below = f"{folder}/" if folder else ""
        shard = below + shard_name(name, MAX_SHARDS - 1)
        keys = {
            "shard": self.shards.key + shard,
            "shard index": self.shards.key + below + index_name(name),
            "shard manifest": self.shards.key + below + manifest_name(name),
            "shard output": (self.parts if merge else output).key + output_name(shard),
        }
        if merge:
            keys["output"] = output.key + output_name(relative)
        if endpoint:
            attempt = self.scoring("j" * MAX_JOB_NAME_LENGTH)
            keys["scoring progress"] = attempt.key + f"progress/{shard}.json"
        return keys


def check_key_bytes(keys: dict[str, str], source: str) -> None:
    """ValidationError naming ``source`` and the first of ``keys`` (by what it is) longer
    than :data:`MAX_KEY_BYTES` in UTF-8."""
    for what, key in keys.items():
        size = len(key.encode())
        if size > MAX_KEY_BYTES:
            raise ValidationError(
                f"input: {source} would be written as the {what} {key!r}, {size} bytes of "
                f"UTF-8 ({len(key)} characters); S3 keys take at most {MAX_KEY_BYTES} bytes: "
                "give the object a shorter key, or the run a shorter output or run_id"
            )
