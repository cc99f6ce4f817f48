"""Local files: the source read with ``pread`` and shards copied inside the kernel.

Shards are written under hidden ``.partial`` names and renamed into place only when every
shard is done, so an interrupted split never leaves a complete-looking set of shards.
"""

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from batchinfer.errors import InputError

# copy_file_range is refused across file systems on old kernels and by some file systems;
# sendfile (file to file since Linux 2.6.33) then does the same copy inside the kernel.
_COPY_FILE_RANGE_UNSUPPORTED = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP}


def kernel_copy(src_fd: int, dst_fd: int, start: int, end: int, *, source: str) -> None:
    """Append bytes ``[start, end)`` of ``src_fd`` to ``dst_fd`` without passing them
    through Python: ``os.copy_file_range``, falling back to ``os.sendfile``."""
    offset = start
    use_copy_file_range = hasattr(os, "copy_file_range")
    while offset < end:
        if use_copy_file_range:
            try:
                copied = os.copy_file_range(src_fd, dst_fd, end - offset, offset)
            except OSError as exc:
                if exc.errno not in _COPY_FILE_RANGE_UNSUPPORTED:
                    raise
                use_copy_file_range = False
                continue
        else:
            copied = os.sendfile(dst_fd, src_fd, offset, end - offset)
        if copied == 0:
            raise InputError(f"{source} ended at byte {offset} before byte {end}: it changed")
        offset += copied


class LocalSource:
    """A local input file, held open for the whole split."""

    copy_workers = 2  # two kernel copies in parallel (they run without the GIL)
    min_copy = 0  # a kernel copy may be of any length

    def __init__(self, path: str) -> None:
        self.path = Path(path).resolve()
        self.uri = str(self.path)
        self.name = self.path.name
        self.parent_prefix = str(self.path.parent) + "/"
        self.etag = None
        try:
            self._file = open(self.path, "rb")  # noqa: SIM115 (closed by close())
        except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            raise InputError(f"{path}: not a readable file ({exc.strerror})") from None
        self._stat = os.fstat(self._file.fileno())
        self.size = self._stat.st_size

    def read_range(self, start: int, end: int) -> bytes:
        return os.pread(self._file.fileno(), end - start, start)

    def open_stream(self) -> BinaryIO:
        self._file.seek(0)
        return self._file

    def copy_to(
        self, writer: "LocalShardWriter", start: int, end: int, on_part: Callable[[int], None]
    ) -> None:
        writer.file.flush()
        kernel_copy(self._file.fileno(), writer.file.fileno(), start, end, source=self.uri)
        writer.size += end - start
        on_part(end - start)

    def check_unchanged(self) -> None:
        now = os.stat(self.path)
        if (now.st_size, now.st_mtime_ns, now.st_ino) != (
            self._stat.st_size,
            self._stat.st_mtime_ns,
            self._stat.st_ino,
        ):
            raise InputError(f"{self.uri} changed while being split; run the split again")

    def close(self) -> None:
        self._file.close()


class LocalShardWriter:
    """One shard being written to its ``.partial`` file."""

    def __init__(self, partial: Path, final: Path) -> None:
        self.partial = partial
        self.final = final
        self.file = open(partial, "wb")  # noqa: SIM115 (closed by finish() or the sink)
        self.size = 0

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.size += len(data)

    def flush(self) -> None:
        self.file.flush()

    def finish(self) -> int:
        self.file.close()
        return self.size


class LocalSink:
    """A local directory receiving shards; ``prefix`` is the directory path with ``/``."""

    def __init__(self, directory: str) -> None:
        path = Path(directory)
        if path.exists() and not path.is_dir():
            raise InputError(f"{directory}: output exists and is not a directory")
        path.mkdir(parents=True, exist_ok=True)
        self.directory = path.resolve()
        self.prefix = str(self.directory) + "/"
        self._writers: list[LocalShardWriter] = []

    def uri(self, name: str) -> str:
        return str(self.directory / name)

    def open(self, name: str) -> LocalShardWriter:
        writer = LocalShardWriter(self.directory / f".{name}.partial", self.directory / name)
        self._writers.append(writer)
        return writer

    def commit(self) -> None:
        """Rename every finished shard into place."""
        for writer in self._writers:
            os.replace(writer.partial, writer.final)
        self._writers.clear()

    def abort(self) -> None:
        """Delete every shard not yet committed."""
        for writer in self._writers:
            writer.file.close()
            writer.partial.unlink(missing_ok=True)
        self._writers.clear()

    def put(self, name: str, data: bytes) -> None:
        """Write a small file atomically (the manifest, the index)."""
        partial = self.directory / f".{name}.partial"
        partial.write_bytes(data)
        os.replace(partial, self.directory / name)
