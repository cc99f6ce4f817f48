"""A local run's S3 inputs, read per shard as the instances take them (spec R3: each input
object goes whole to one instance, or each shard of it does).

Nothing of an object is read before the run knows it will transform it (``--resume`` keeps
an unchanged one by its listed ETag). The checks of an object's first bytes are ranged
reads. A plain object is planned where it is, by small ranged reads around each cut
(:func:`batchinfer.sharding.plan_shards`); each unit (the object, or one shard of it) is
fetched into a file of its own only when an instance is about to take it, the next
``ahead`` units of the engine's queue with it, and that file goes once the unit's outcome
is recorded. A gzip object is fetched whole when first needed (the splitter re-chunks it as
a stream). Every read is pinned to the ETag the listing gave.
"""

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from batchinfer.engine.inputs import InputFile
from batchinfer.engine.s3_inputs import S3Input, stage_range
from batchinfer.engine.s3_requests import naming
from batchinfer.errors import InputError
from batchinfer.sharding import plan_shards, shard_name
from batchinfer.sharding.s3 import S3Source
from batchinfer.uris import parse_s3_uri


class S3Staging:
    """The S3 objects a run takes, as input files below ``folder`` that are fetched when
    first read, ``ahead`` units ahead of the instances (a pool of as many threads)."""

    def __init__(self, client: Any, objects: list[S3Input], folder: Path, ahead: int) -> None:
        self._client = client
        self._folder = folder
        self._ahead = ahead
        self._sources: dict[str, S3Source] = {}
        self._ranges: dict[Path, tuple[InputFile, int, int]] = {}
        self._queue: list[Path] = []
        self._place: dict[Path, int] = {}  # each unit's place in the queue
        self._fetches: dict[Path, Future[None]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max(1, ahead), thread_name_prefix="fetch")
        self.files = [
            self._unit(
                InputFile(folder / obj.name, obj.name, 0, obj.size, origin=obj.uri, etag=obj.etag),
                0,
                obj.size,
            )
            for obj in objects
        ]

    def source(self, file: InputFile) -> S3Source:
        """The object ``file`` stands for, opened once (a HEAD); InputError when its ETag is
        no longer the listing's."""
        uri = file.where
        with self._lock:
            source = self._sources.get(uri)
        if source is None:
            with naming(uri):
                source = S3Source(self._client, parse_s3_uri(uri))
            if source.etag != file.etag:
                raise InputError(
                    f"{uri} changed since it was listed (its ETag is no longer {file.etag}); "
                    "run again"
                )
            with self._lock:
                self._sources[uri] = source
        return source

    def shard_units(self, file: InputFile, count: int, *, header: bool) -> list[InputFile]:
        """The plain object ``file`` cut into ``count`` line-aligned shards planned where it
        is (fewer when records are longer; without the header line with ``header``), each
        fetched into its own file when taken; ``file`` itself when nothing could be cut."""
        source = self.source(file)
        plan = plan_shards(
            source.size, source.read_range, shards=count, header=header, source=file.where
        )
        if plan.whole_object:
            return [file]
        name = PurePosixPath(file.name)
        units = []
        for n, (start, end) in enumerate(plan.ranges):
            shard = (name.parent / shard_name(name.name, n)).as_posix()
            unit = replace(file, path=self._folder / shard, name=shard, end=end - start)
            units.append(self._unit(unit, start, end))
        return units

    def queue(self, units: list[InputFile]) -> None:
        """The order in which the engine takes ``units``, which its fetches run ahead in."""
        with self._lock:
            self._queue = [unit.path for unit in units if unit.path in self._ranges]
            self._place = {path: at for at, path in enumerate(self._queue)}

    def close(self) -> None:
        """Stop fetching; returns once no fetch writes any more."""
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _unit(self, file: InputFile, start: int, end: int) -> InputFile:
        """``file``, fetched from bytes ``[start, end)`` of its object when first read."""
        self._ranges[file.path] = (file, start, end)
        return replace(file, fetch=partial(self._fetch, file.path))

    def _fetch(self, path: Path) -> None:
        """Fetch the unit at ``path`` and start the next ``ahead`` of the queue; once it is
        there, return."""
        with self._lock:
            at = self._place.get(path)
            wanted = [path] if at is None else self._queue[at : at + 1 + self._ahead]
            for unit in wanted:
                if unit not in self._fetches:
                    self._fetches[unit] = self._pool.submit(self._write, unit)
            fetch = self._fetches[path]
        fetch.result()

    def _write(self, path: Path) -> None:
        file, start, end = self._ranges[path]
        with naming(file.where):
            stage_range(self.source(file), start, end, path, self._stop)
