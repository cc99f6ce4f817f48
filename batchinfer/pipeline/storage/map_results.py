"""A Distributed Map's results as its ResultWriter leaves them in S3: the manifest lists the
result files by child status, each file JSON Lines as :data:`MAP_RESULTS_FORMAT` declares
(a succeeded child's output alone, a failed child with its ``Input``, ``Error`` and
``Cause``; https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html).
The files are streamed a line at a time, so a reader holds one result, whatever the number of
children."""

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from batchinfer.errors import InputError
from batchinfer.pipeline.storage.s3io import read_json, read_json_lines
from batchinfer.uris import S3Location

# Bytes a result file is read by: a result line is a few hundred bytes, a failed child's
# (its Input and Cause) at most a few hundred KiB.
RESULTS_CHUNK = 64 * 1024
SHOWN = 10


@dataclass(frozen=True)
class ChildFailure:
    """A child execution that failed: its input, and the error and cause it failed with."""

    input: Any
    error: str
    cause: str


@dataclass(frozen=True)
class MapResults:
    """The result files a Map's manifest lists, by child status."""

    manifest: S3Location
    succeeded: tuple[S3Location, ...]
    failed: tuple[S3Location, ...]
    pending: tuple[S3Location, ...]

    @classmethod
    def read(cls, s3: Any, manifest: S3Location) -> "MapResults":
        files = read_json(s3, manifest).get("ResultFiles")
        if not isinstance(files, dict):
            raise InputError(f"{manifest.uri}: not a Map result manifest (no ResultFiles)")

        def listed(status: str) -> tuple[S3Location, ...]:
            return tuple(S3Location(manifest.bucket, f["Key"]) for f in files.get(status) or [])

        return cls(manifest, listed("SUCCEEDED"), listed("FAILED"), listed("PENDING"))

    def outputs(self, s3: Any) -> Iterator[Any]:
        """The succeeded children's outputs, one at a time."""
        for location in self.succeeded:
            yield from read_json_lines(s3, location, chunk=RESULTS_CHUNK)

    def failures(self, s3: Any) -> Iterator[ChildFailure]:
        """The failed children, one at a time."""
        for location in self.failed:
            for result in read_json_lines(s3, location, chunk=RESULTS_CHUNK):
                try:
                    child_input = json.loads(result.get("Input") or "null")
                except ValueError:
                    child_input = result.get("Input")
                yield ChildFailure(
                    child_input, result.get("Error") or "", result.get("Cause") or ""
                )

    def unfinished(self) -> None:
        """InputError naming the manifest when children were left pending (the Map run
        stopped before them)."""
        if self.pending:
            keys = ", ".join(location.key for location in self.pending)
            raise InputError(f"{self.manifest.uri}: children did not all run: {keys}")


def describe_failures(failures: Iterator[ChildFailure], name: Callable[[Any], str]) -> str:
    """The first :data:`SHOWN` failures, each as ``<name of its input> (<error>): <cause>``,
    and how many more; empty when there is none."""
    shown: list[str] = []
    more = 0
    for failure in failures:
        if len(shown) < SHOWN:
            shown.append(f"{name(failure.input)} ({failure.error}): {failure.cause}")
        else:
            more += 1
    return "; ".join(shown) + (f" (and {more} more)" if more else "")


def shard_name(child_input: Any) -> str:
    """The name of the shard a child was given (the ``shard`` its ItemSelector sets)."""
    shard = child_input.get("shard") if isinstance(child_input, dict) else None
    return str(shard["name"]) if isinstance(shard, dict) and "name" in shard else repr(shard)
