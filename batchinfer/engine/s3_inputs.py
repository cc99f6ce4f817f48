"""A local job's S3 inputs and model (spec R4: a key prefix or a ManifestFile selects the input
objects; R12: each input object gives one output named after it).

An S3 input is a prefix (every object below it that :mod:`batchinfer.sharding.selection`
takes, as the pipeline's Plan lists it), one object, or a local ManifestFile whose prefix is
in S3. The objects are listed before anything is written (with their sizes and ETags,
which decide what ``--resume`` keeps); :mod:`batchinfer.engine.s3_staging` then reads them
per shard. Bytes of an object are copied to disk with parallel ranged GETs pinned to its ETag
(:class:`batchinfer.sharding.s3.S3Source`), written in place.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from batchinfer.engine.inputs import check_distinct_names, is_manifest, manifest_entries
from batchinfer.engine.s3_requests import naming
from batchinfer.errors import InputError, ValidationError
from batchinfer.multipart import copy_part_ranges
from batchinfer.sharding.listing import input_objects
from batchinfer.sharding.s3 import S3Source
from batchinfer.sharding.selection import EVERY_INPUT, InputSelection
from batchinfer.uris import is_s3_uri, parse_s3_uri

# Each ranged GET of bytes copied to disk; STAGE_THREADS of them at once.
STAGE_RANGE = 8 * 1024**2
STAGE_THREADS = 8


@dataclass(frozen=True)
class S3Input:
    """An input object as its listing gives it."""

    uri: str
    name: str  # the key relative to the input prefix; the output is ``name + ".out"``
    size: int
    etag: str


def in_s3(inputs: list[str]) -> bool:
    """Whether ``inputs`` are in S3 (s3:// URIs, or local ManifestFiles whose prefix is);
    a ValidationError when some are and some are not."""
    remote = [_in_s3(input) for input in inputs]
    if any(remote) and not all(remote):
        raise ValidationError("INPUT: give local paths or s3:// URIs, not both")
    return any(remote)


def _in_s3(input: str) -> bool:
    if is_s3_uri(input):
        return True
    path = Path(input)
    return is_manifest(path) and path.is_file() and manifest_entries(path)[0].startswith("s3://")


def s3_inputs(
    client: Any,
    inputs: list[str],
    selection: InputSelection = EVERY_INPUT,
    *,
    leave_out: str | None = None,
) -> list[S3Input]:
    """The objects ``inputs`` (in S3: :func:`in_s3`) select, sorted by name, but for those
    below the prefix ``leave_out`` (the job's output); an InputError names a prefix without
    any, a missing object or a name that is not a relative path."""
    below = None if leave_out is None else leave_out.rstrip("/") + "/"
    found = []
    for input in inputs:
        if is_s3_uri(input):
            location = parse_s3_uri(input, field="INPUT")
            base, names = location.key[: location.key.rfind("/") + 1], None
        else:
            prefix, rels = manifest_entries(Path(input))
            location = parse_s3_uri(prefix, field=f"{input}: prefix")
            if not prefix.endswith("/"):
                location = location.child("")
            base, names = location.key, tuple(rels)
        with naming(location.uri):
            for obj in input_objects(client, location, names, selection):
                uri = f"s3://{location.bucket}/{obj['Key']}"
                if below is not None and uri.startswith(below):
                    continue
                name = _relative_name(obj["Key"][len(base) :], uri)
                found.append(S3Input(uri, name, obj["Size"], obj["ETag"]))
    if not found:
        raise InputError(f"input: every object under {', '.join(inputs)} is below --output {below}")
    check_distinct_names((obj.name, obj.uri) for obj in found)
    return sorted(found, key=lambda obj: obj.name)


def fetch_model(client: Any, uri: str, folder: Path) -> Path:
    """The model artifact at ``uri`` (a model.tar.gz or a model file), copied into
    ``folder`` under its own name."""
    location = parse_s3_uri(uri, field="--model")
    name = PurePosixPath(location.key).name
    if not name or location.key.endswith("/"):
        raise ValidationError(f"--model {uri}: name an object (model.tar.gz), not a folder")
    path = folder / name
    with naming(location.uri):
        source = S3Source(client, location)
        stage_range(source, 0, source.size, path)
    return path


def stage_range(
    source: S3Source, start: int, end: int, path: Path, stop: threading.Event | None = None
) -> None:
    """Copy bytes ``[start, end)`` of ``source`` to ``path`` by parallel ranged GETs written
    in place (none once ``stop`` is set). An InputError when the object is gone or changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        os.truncate(out.fileno(), end - start)

        def copy(bounds: tuple[int, int]) -> None:
            if stop is None or not stop.is_set():
                os.pwrite(out.fileno(), source.read_range(*bounds), bounds[0] - start)

        with ThreadPoolExecutor(STAGE_THREADS) as pool:
            list(pool.map(copy, copy_part_ranges(start, end, STAGE_RANGE)))


def _relative_name(name: str, uri: str) -> str:
    """``name`` when it is a relative path that stays below the job's folders."""
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InputError(
            f"{uri}: its name {name!r} below the input has an empty, '.' or '..' part; "
            "its output could not be named after it"
        )
    return name
