"""The split tasks of a run, each with the shard list its split answered
(``SplitResult.shard_list``), as Collect reads them: from the split Map's result files (a few
large GETs, whatever the number of objects) instead of one shard index an object.

The result files hold the children in the order they ended, and Collect numbers the shards
in the order of the split tasks. The tasks' inputs and the listings are loaded into SQLite's
private temporary database (stdlib ``sqlite3``; on disk in ``/tmp`` past its page cache, and
gone when it closes), joined on the input, and the listings written out in task order to a
temporary file; Collect then reads the tasks again beside that file, a line of each at a
time. Memory stays bounded whatever the number of objects, and SQLite, which lets go of
Python's lock at each row, is done before Collect's threads start. A task whose child listed
no shards (an object of more than ``LISTED_SHARDS``, or split by a split job, whose child
answers its item) comes with None: Collect reads its index.
"""

import json
import sqlite3
from collections.abc import Iterator
from tempfile import TemporaryFile
from typing import IO, Any

from batchinfer.errors import InputError
from batchinfer.pipeline.storage.map_results import MapResults
from batchinfer.pipeline.storage.s3io import read_json_lines
from batchinfer.pipeline.storage.shard_indexes import SplitShards
from batchinfer.uris import S3Location

_SCHEMA = (
    "CREATE TABLE tasks (number INTEGER PRIMARY KEY, input TEXT NOT NULL)",
    "CREATE TABLE listed (input TEXT PRIMARY KEY, compression TEXT NOT NULL, "
    "shards TEXT NOT NULL) WITHOUT ROWID",
)
_IN_TASK_ORDER = (
    "SELECT listed.compression, listed.shards FROM tasks "
    "LEFT JOIN listed ON listed.input = tasks.input ORDER BY tasks.number"
)


class SplitListings:
    """The split tasks at ``tasks`` (Plan's item file) in order, each with the shards its
    child listed in the SplitInputs Map's results (``manifest``; None: an execution started
    before the Map's results were passed to Collect, whose every index is read); a context
    manager that removes its file."""

    def __init__(self, s3: Any, tasks: S3Location, manifest: S3Location | None) -> None:
        self._s3, self._tasks, self._manifest = s3, tasks, manifest
        self._where = manifest.uri if manifest else tasks.uri  # what an error names
        self._listed = TemporaryFile()  # noqa: SIM115 (closed by close())
        if manifest is None:
            return
        try:
            db = sqlite3.connect("")  # private, temporary: deleted when closed
            try:
                _join(db, s3, tasks, manifest, self._listed)
            finally:
                db.close()
            self._listed.seek(0)
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[tuple[dict[str, Any], SplitShards | None]]:
        """Each split task, in order, with the shards its split listed (None: none)."""
        tasks = read_json_lines(self._s3, self._tasks)
        if self._manifest is None:
            yield from ((task, None) for task in tasks)
            return
        for task, line in zip(tasks, self._listed, strict=True):
            listing = json.loads(line)
            yield task, None if listing is None else self._shards(task, *listing)

    def _shards(self, task: dict[str, Any], compression: str, shards: Any) -> SplitShards:
        if not isinstance(shards, list) or not all(_is_pair(shard) for shard in shards):
            raise InputError(
                f"{self._where}: the split of {task['input']} answered a shard list that "
                f"is not [name, size] pairs: {json.dumps(shards)[:200]}"
            )
        return SplitShards(compression, tuple((name, size) for name, size in shards))

    def close(self) -> None:
        self._listed.close()

    def __enter__(self) -> "SplitListings":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _join(
    db: sqlite3.Connection, s3: Any, tasks: S3Location, manifest: S3Location, out: IO[bytes]
) -> None:
    """Load the tasks' inputs and the listings into ``db`` and write the listings in task
    order to ``out``: a JSON line ``[compression, shards]`` per task, ``null`` where none."""
    # A scratch database rebuilt by every Collect: no journal, no waits for the disk.
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    for statement in _SCHEMA:
        db.execute(statement)
    db.executemany(
        "INSERT INTO tasks VALUES (?, ?)",
        enumerate(_input_of(task, tasks) for task in read_json_lines(s3, tasks)),
    )
    results = MapResults.read(s3, manifest)
    results.unfinished()
    db.executemany("INSERT OR REPLACE INTO listed VALUES (?, ?, ?)", _listed(results.outputs(s3)))
    # The shards are a JSON text already, as the split answered them.
    for compression, shards in db.execute(_IN_TASK_ORDER):
        line = "null" if shards is None else f"[{json.dumps(compression)}, {shards}]"
        out.write(f"{line}\n".encode())


def _input_of(task: Any, tasks: S3Location) -> str:
    """The input object of a split task; InputError naming the item file when it has none."""
    if not isinstance(task, dict) or not isinstance(task.get("input"), str):
        raise InputError(f"{tasks.uri}: a split task has no input: {str(task)[:200]}")
    return task["input"]


def _listed(outputs: Iterator[Any]) -> Iterator[tuple[str, str, str]]:
    """(input, compression, shard list as JSON) of each child answer that lists its shards."""
    for output in outputs:
        if not isinstance(output, dict):
            continue
        listing, source = output.get("shard_list"), output.get("input")
        if isinstance(listing, list) and isinstance(source, str):
            compression = str(output.get("compression_type") or "None")
            yield source, compression, json.dumps(listing)


def _is_pair(shard: Any) -> bool:
    """Whether ``shard`` is ``[name, size]``."""
    return (
        isinstance(shard, list)
        and len(shard) == 2
        and isinstance(shard[0], str)
        and isinstance(shard[1], int)
        and not isinstance(shard[1], bool)
    )
