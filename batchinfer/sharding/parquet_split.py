"""Parquet input: shards of whole row groups, each a standalone Parquet file.

A row group is the smallest piece of a Parquet file that stands alone, so a shard is a run
of consecutive row groups: ``PAR1``, the run's bytes copied as they are (kernel copy
locally, UploadPartCopy on S3), and a footer written for it
(:mod:`batchinfer.transform.parquet_files`). Nothing is decoded, so a split reads only the
footer and, on S3, the edges of each shard (S3 copies parts of at least 5 MiB; the bytes
around them are read and uploaded). A file of one row group is its own only shard.
"""

from collections.abc import Callable
from typing import Any

from batchinfer.errors import InputError, ValidationError
from batchinfer.sharding.local_files import LocalSource
from batchinfer.sharding.names import MAX_SHARDS
from batchinfer.sharding.planner import shard_count
from batchinfer.transform.parquet_files import data_span, shard_footer
from batchinfer.transform.parquet_footer import MAGIC, ParquetError, ParquetFooter, footer_at_end


def is_parquet(read_range: Callable[[int, int], bytes], size: int) -> bool:
    """Whether the object starts with Parquet's magic."""
    return size >= len(MAGIC) and read_range(0, len(MAGIC)) == MAGIC


def row_group_runs(footer: ParquetFooter, count: int) -> list[tuple[int, int]]:
    """Up to ``count`` runs ``[first, stop)`` of consecutive row groups, of about equal
    bytes: each row group goes to the run its middle byte falls in. Fewer runs where there
    are fewer row groups (or one group outweighs the others); one run for a file of none."""
    sizes = [group.size for group in footer.row_groups]
    total = sum(sizes)
    if len(sizes) <= 1 or count <= 1 or total == 0:
        return [(0, len(sizes))]
    runs: list[tuple[int, int]] = []
    before = 0
    last_run = -1
    for index, size in enumerate(sizes):
        run = min(count - 1, (2 * before + size) * count // (2 * total))
        if run != last_run:
            runs.append((index, index + 1))
            last_run = run
        else:
            runs[-1] = (runs[-1][0], index + 1)
        before += size
    return runs


def packed_runs(footer: ParquetFooter, max_bytes: int) -> list[tuple[int, int]]:
    """Runs ``[first, stop)`` of consecutive row groups, each as many as fit a shard of
    ``max_bytes`` (its footer counted as the whole file's, which is no smaller); a row
    group larger than that is a run of its own."""
    budget = max_bytes - footer.footer_bytes - len(MAGIC)
    runs: list[tuple[int, int]] = []
    held = 0
    for index, group in enumerate(footer.row_groups):
        if runs and runs[-1][1] == index and held + group.size <= budget:
            runs[-1] = (runs[-1][0], index + 1)
            held += group.size
        else:
            runs.append((index, index + 1))
            held = group.size
    return runs or [(0, 0)]


def shard_runs(
    footer: ParquetFooter, *, shards: int | None, shard_size: int | None, source: str
) -> list[tuple[int, int]]:
    """The row-group runs a split makes: ``shards`` runs of about equal bytes
    (:func:`row_group_runs`) or runs packed into ``shard_size`` bytes (:func:`packed_runs`);
    ValidationError naming ``source`` when they would be more than a split may make."""
    if shard_size is None:
        start, end = data_span(footer)
        return row_group_runs(footer, shard_count(end - start, shards=shards, shard_size=None))
    runs = packed_runs(footer, shard_size)
    if len(runs) > MAX_SHARDS:
        raise ValidationError(
            f"{source}: shards of {shard_size} bytes make {len(runs)} shards of its row "
            f"groups; the limit is {MAX_SHARDS}"
        )
    return runs


def shard_bytes(footer: ParquetFooter, first: int, stop: int, *, source: str) -> int:
    """The bytes of the shard of row groups ``first`` to ``stop``: magic, data and footer."""
    start, end = data_span(footer, first, stop)
    return len(MAGIC) + end - start + len(shard_footer(footer, first, stop, source=source))


def plan_parquet(
    source: Any, *, shards: int | None, shard_size: int | None, rows: int | None = None
) -> tuple[list[tuple[int, int]], list[bytes]]:
    """Where to cut the Parquet ``source`` into shards of whole row groups: ``shards`` runs
    of about equal bytes, or runs packed into ``shard_size`` bytes a shard
    (:func:`packed_runs`: a Parquet shard is one request, which MaxPayloadInMB bounds). The
    byte range of each shard's row groups and its footer; the whole object and no footer
    when it makes one shard. InputError naming the source when it is not a whole Parquet
    file, or when its footer does not hold the ``rows`` expected of it (the object changed
    since they were read)."""
    try:
        footer = footer_at_end(source.read_range, source.size)
    except ParquetError as exc:
        raise InputError(f"{source.uri}: {exc}") from None
    if rows is not None and footer.rows != rows:
        raise InputError(
            f"{source.uri}: holds {footer.rows:,} rows, not the {rows:,} its footer held when "
            "the run was planned; it changed since, so start the run again"
        )
    runs = shard_runs(footer, shards=shards, shard_size=shard_size, source=source.uri)
    if len(runs) == 1:
        return [(0, source.size)], []
    try:
        tails = [shard_footer(footer, first, stop, source=source.uri) for first, stop in runs]
    except ParquetError as exc:
        raise InputError(str(exc)) from None
    return [data_span(footer, first, stop) for first, stop in runs], tails


def file_footer(path: str) -> ParquetFooter:
    """The footer of the local Parquet file ``path``, read from its end."""
    source = LocalSource(path)
    try:
        return footer_at_end(source.read_range, source.size)
    finally:
        source.close()


def copy_framed(
    source: Any, writer: Any, start: int, end: int, tail: bytes, on_part: Callable[[int], None]
) -> None:
    """Write ``PAR1``, the source's bytes ``[start, end)`` and ``tail``. The middle is copied
    by the source; each edge of ``source.min_copy`` bytes is read and written with the
    framing, so that every copied part is as large as the store needs."""
    edge = source.min_copy
    if end - start < 3 * edge:
        writer.write(MAGIC + source.read_range(start, end) + tail)
        on_part(end - start)
        return
    writer.write(MAGIC + source.read_range(start, start + edge))
    writer.flush()
    source.copy_to(writer, start + edge, end - edge, on_part)
    writer.write(source.read_range(end - edge, end) + tail)
    on_part(2 * edge)
