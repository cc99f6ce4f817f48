"""Where a run keeps its objects in the data bucket.

``input/`` is where users drop data; a run's shards go to ``shards/<run id>/`` (expired by
a lifecycle rule), its bookkeeping (input list, manifests, Map results) to
``runs/<run id>/``, and its results to ``output/<run id>/`` unless the request names an
output prefix.
"""

from dataclasses import dataclass

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
