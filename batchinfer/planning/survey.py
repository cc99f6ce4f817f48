"""What a job's inputs hold: per input its bytes, records, largest record and shards.

Local inputs are read once (decompressed when the job would decompress them) to count
records and find the largest; shards are planned with the planner ``batchinfer run`` and
the pipeline use (``plan_shards`` on the input's bytes; for gzip input, the count asked of
the gzip splitter). S3 inputs are listed only: sizes and shards, no records. A header row
is no record: it is dropped first, as a split drops it.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate, chain
from typing import Any, BinaryIO, Literal

from batchinfer.engine.inputs import GZIP_MAGIC, InputFile, check_not_parquet
from batchinfer.errors import InputError
from batchinfer.planning.scan import LargestRecord, Reservoir, scan_lines
from batchinfer.sharding.auto import parquet_split, requested_shards
from batchinfer.sharding.gzip_split import decompressed_chunks, split_header
from batchinfer.sharding.local_files import LocalSource
from batchinfer.sharding.parquet_split import file_footer, shard_bytes, shard_runs
from batchinfer.sharding.planner import plan_shards, shard_count
from batchinfer.transform.parquet_files import largest_row_group, request_bytes_alone
from batchinfer.transform.parquet_footer import MAGIC as PARQUET_MAGIC
from batchinfer.transform.parquet_footer import ParquetError
from batchinfer.transform.settings import TransformSettings
from batchinfer.uris import parse_s3_uri

READ_SIZE = 8 * 1024 * 1024


@dataclass(frozen=True)
class Sharding:
    """How inputs are pre-split: ``shards`` (a count or 'auto') or ``shard_size`` bytes;
    neither keeps every input whole."""

    shards: int | Literal["auto"] | None = None
    shard_size: int | None = None

    @property
    def requested(self) -> bool:
        return self.shards is not None or self.shard_size is not None


@dataclass(frozen=True)
class InputSurvey:
    name: str  # the output keeps this name (R12: each input object gives one output named after it)
    location: str
    bytes: int
    shards: int
    gzip: bool  # the bytes are gzip (by name or by content)
    data_bytes: int | None = None  # after decompression, no header row; None when not read
    records: int | None = None
    largest: LargestRecord | None = None
    row_groups: int | None = None  # Parquet: its row groups
    largest_row_group: int | None = None  # Parquet: the bytes of its largest row group
    largest_row_group_request: int | None = None  # and of a request of it alone, at most


def survey_parquet(file: InputFile, settings: TransformSettings, sharding: Sharding) -> InputSurvey:
    """A Parquet input from its footer (its last bytes): its rows are its records, and it
    is one request, or each of its shards of whole row groups is (as ``split`` would cut
    it); its largest request is the largest of them. InputError naming the file when it
    is not a whole Parquet file."""
    try:
        footer = file_footer(str(file.path))
    except ParquetError as exc:
        raise InputError(f"{file.path}: {exc}, but --content-type is Parquet") from None
    asked = (
        {"shard_size": sharding.shard_size}
        if sharding.shard_size is not None
        else parquet_split(file.size, sharding.shards, settings.resolve().max_payload_bytes)
    )
    runs = (
        [(0, len(footer.row_groups))]
        if asked is None
        else shard_runs(
            footer, shards=asked.get("shards"), shard_size=asked.get("shard_size"), source=file.name
        )
    )
    group, _ = largest_row_group(footer)
    largest = LargestRecord(1, file.size)
    if len(runs) > 1:
        firsts = list(accumulate((g.rows for g in footer.row_groups), initial=1))
        largest = max(
            (
                LargestRecord(firsts[first], shard_bytes(footer, first, stop, source=file.name))
                for first, stop in runs
            ),
            key=lambda record: record.size,
        )
    return InputSurvey(
        name=file.name,
        location=str(file.path),
        bytes=file.size,
        shards=len(runs),
        gzip=False,
        data_bytes=file.size,
        records=footer.rows,
        largest=largest,
        row_groups=len(footer.row_groups),
        largest_row_group=footer.row_groups[group].size if footer.row_groups else 0,
        largest_row_group_request=(
            request_bytes_alone(footer, group) if footer.row_groups else None
        ),
    )


def survey_local(
    file: InputFile,
    settings: TransformSettings,
    sharding: Sharding,
    reservoir: Reservoir,
    *,
    header: bool = False,
    skip_blank_lines: bool = False,
) -> InputSurvey:
    """Read ``file`` as the job would frame it (SplitType Line or None), without its first
    line when it is a ``header`` and without empty lines when ``skip_blank_lines``; Line
    records go to ``reservoir``. A Parquet input's footer alone is read; a Parquet file sent
    as another type is refused (ValidationError naming it), as ``batchinfer run`` refuses it."""
    if settings.parquet_in:
        return survey_parquet(file, settings, sharding)
    size = file.size
    with file.path.open("rb") as handle:
        head = handle.read(len(PARQUET_MAGIC))
        check_not_parquet(head, str(file.path), settings)
        looks_gzip = file.name.endswith(".gz") or head.startswith(GZIP_MAGIC)
        handle.seek(0)
        chunks = _chunks(handle, file.name, settings.compression_type == "Gzip")
        if header and size:
            chunks = _after_header(chunks, str(file.path))
        data_bytes = None
        records: int | None = None
        largest: LargestRecord | None = None
        if settings.split_type == "Line":
            scan = scan_lines(chunks, reservoir, skip_blank_lines)
            data_bytes, records, largest = scan.bytes, scan.records, scan.largest
        elif settings.split_type == "None":
            data_bytes = sum(map(len, chunks))
            records, largest = 1, LargestRecord(1, data_bytes)
        # RecordIO and TFRecord records are not framed here (the local engine refuses them)
    return InputSurvey(
        name=file.name,
        location=str(file.path),
        bytes=size,
        shards=planned_shards(
            str(file.path),
            size,
            data_bytes,
            settings,
            sharding,
            lambda: LocalSource(str(file.path)),
            header=header,
        ),
        gzip=looks_gzip,
        data_bytes=data_bytes,
        records=records,
        largest=largest,
    )


def _chunks(handle: BinaryIO, name: str, gzip: bool) -> Iterator[bytes]:
    if gzip:
        return decompressed_chunks(handle, source=name, on_read=lambda _n: None)
    return iter(lambda: handle.read(READ_SIZE), b"")


def _after_header(chunks: Iterator[bytes], source: str) -> Iterator[bytes]:
    """``chunks`` from just after the first line, as a split drops a header."""
    rest = split_header(chunks, source)[1]
    return chain([rest], chunks)


def planned_shards(
    location: str,
    size: int,
    data_bytes: int | None,
    settings: TransformSettings,
    sharding: Sharding,
    open_source: Callable[[], Any],
    *,
    header: bool = False,
) -> int:
    """The shards ``split`` would make of an input (1: it stays whole), with ``header``
    dropping its first line. Plain input is cut by ``plan_shards`` reading the source
    ``open_source()`` opens; gzip input (by name or CompressionType, as ``split`` decides)
    gets the count asked of the gzip splitter, sized on its decompressed bytes when known."""
    if not sharding.requested or settings.split_type != "Line" or size == 0:
        return 1
    count = (
        None
        if sharding.shard_size is not None
        else requested_shards(size, sharding.shards, settings.instance_count)
    )
    if count == 1:
        return 1
    if settings.compression_type == "Gzip" or location.endswith(".gz"):
        data = size if data_bytes is None else data_bytes
        return shard_count(data, shards=count, shard_size=sharding.shard_size)
    source = open_source()
    try:
        plan = plan_shards(
            size,
            source.read_range,
            shards=count,
            shard_size=sharding.shard_size,
            header=header,
            source=location,
        )
    finally:
        source.close()
    return len(plan.ranges)


def survey_s3_object(
    name: str,
    uri: str,
    size: int,
    settings: TransformSettings,
    sharding: Sharding,
    s3: Any,
    *,
    header: bool = False,
) -> InputSurvey:
    """An S3 object from its listing, not read: its shards are planned with ranged reads of
    a few KiB around each cut (and of its ``header`` line)."""
    from batchinfer.sharding.s3 import S3Source

    location = parse_s3_uri(uri)
    return InputSurvey(
        name=name,
        location=uri,
        bytes=size,
        shards=planned_shards(
            uri, size, None, settings, sharding, lambda: S3Source(s3, location), header=header
        ),
        gzip=uri.endswith(".gz"),
    )
