"""``split``: one input object (local file or S3 object) into line-aligned shards."""

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from threading import Lock
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.sharding.gzip_split import split_gzip
from batchinfer.sharding.header import check_header
from batchinfer.sharding.index import Shard, ShardIndex
from batchinfer.sharding.local_files import LocalSink, LocalSource
from batchinfer.sharding.names import index_name, manifest_name, shard_name
from batchinfer.sharding.parquet_split import copy_framed, is_parquet, plan_parquet
from batchinfer.sharding.planner import ShardPlan, plan_shards
from batchinfer.transform.settings import ENUMS
from batchinfer.uris import is_s3_uri, parse_s3_uri

COMPRESSION_TYPES = ENUMS["compression_type"]  # spec R2: the values CreateTransformJob allows

Progress = Callable[[int, int], None]


def split(
    input: str,
    output: str,
    *,
    shards: int | None = None,
    shard_size: int | None = None,
    header: bool = False,
    header_sha256: str | None = None,
    compression_type: str = "None",
    s3_client: Any = None,
    progress: Progress | None = None,
    rows: int | None = None,
) -> ShardIndex:
    """Split ``input`` into shards under ``output`` and write its manifest and index there.

    ``input`` and ``output`` are both local paths (``output`` a directory) or both
    ``s3://`` URIs (``output`` a prefix). Give ``shards`` (a count) or ``shard_size``
    (target bytes per shard). Plain input is cut by byte ranges and copied without passing
    through Python (kernel copy locally, UploadPartCopy on S3); gzip input (``.gz`` or
    ``compression_type="Gzip"``) is re-chunked into gzip shards. An input that fits one
    shard is not copied: the index points at the input itself. With ``header`` the first
    line is dropped from the shards and kept in the index; with ``header_sha256`` too, a
    header line of another digest fails the split (the inputs of a run share one header:
    :mod:`batchinfer.sharding.header`). Parquet input (known by its leading ``PAR1``) is cut
    into runs of whole row groups, each a standalone Parquet file
    (:mod:`batchinfer.sharding.parquet_split`); with ``rows`` (its rows as read before), a
    footer that says otherwise fails the split. ``progress(done, total)`` is
    called as bytes are processed. Shards are published only when all are written; the
    manifest (``<name>.manifest``) and then the index (``<name>.index.json``) are written
    last. Returns the index, whose ``location`` and ``manifest`` say where they are.
    """
    if compression_type not in COMPRESSION_TYPES:
        raise ValidationError(
            f"compression_type: {compression_type!r} must be one of {', '.join(COMPRESSION_TYPES)}"
        )
    if is_s3_uri(input) != is_s3_uri(output):
        raise ValidationError(
            f"input {input!r} and output {output!r} must both be local or both be s3:// URIs"
        )
    gzip = splits_as_gzip(input, compression_type)
    source, sink = _open(input, output, s3_client)
    try:
        try:
            if gzip:
                header_line, made = split_gzip(
                    source,
                    sink,
                    shards=shards,
                    shard_size=shard_size,
                    header=header,
                    progress=progress,
                )
                prefix = sink.prefix
                if header_line is None and len(made) == 1:
                    # the input fits one shard: use it as it is, like plain input
                    sink.abort()
                    prefix = source.parent_prefix
                    made = [Shard(source.name, source.uri, 0, made[0].end, source.size)]
            elif rows is not None or is_parquet(source.read_range, source.size):
                if header:
                    raise ValidationError(
                        f"{source.uri}: a Parquet file has no header line; split it without one"
                    )
                header_line = None
                ranges, tails = plan_parquet(
                    source, shards=shards, shard_size=shard_size, rows=rows
                )
                plan = ShardPlan(source.size, None, ranges)
                prefix, made = _materialise(plan, source, sink, progress, tails)
            else:
                plan = plan_shards(
                    source.size,
                    source.read_range,
                    shards=shards,
                    shard_size=shard_size,
                    header=header,
                    source=source.uri,
                )
                header_line = plan.header
                prefix, made = _materialise(plan, source, sink, progress)
            check_header(header_line, header_sha256, source=source.uri)
            source.check_unchanged()
            sink.commit()
        except BaseException:
            sink.abort()
            raise
    finally:
        source.close()
    index = ShardIndex(
        source=source.uri,
        etag=source.etag,
        source_size=source.size,
        compression="Gzip" if gzip else "None",
        header=header_line,
        prefix=prefix,
        shards=made,
        location=sink.uri(index_name(source.name)),
        manifest=sink.uri(manifest_name(source.name)),
    )
    sink.put(manifest_name(source.name), json.dumps(index.manifest_entries()).encode())
    sink.put(index_name(source.name), index.to_json().encode())
    return index


def splits_as_gzip(input: str, compression_type: str) -> bool:
    """Whether :func:`split` re-chunks ``input`` as gzip rather than cutting byte ranges."""
    return compression_type == "Gzip" or input.endswith(".gz")


def _open(input: str, output: str, s3_client: Any) -> tuple[Any, Any]:
    """The source and the sink for local or S3 locations."""
    if not is_s3_uri(input):
        source = LocalSource(input)
        try:
            return source, LocalSink(output)
        except BaseException:
            source.close()
            raise
    from batchinfer.sharding.s3 import S3Sink, S3Source

    if s3_client is None:
        import boto3

        s3_client = boto3.client("s3")
    s3_source = S3Source(s3_client, parse_s3_uri(input, field="input"))
    return s3_source, S3Sink(
        s3_client, parse_s3_uri(output, field="output"), s3_source.content_type
    )


def _materialise(
    plan: ShardPlan,
    source: Any,
    sink: Any,
    progress: Progress | None,
    tails: list[bytes] | None = None,
) -> tuple[str, list[Shard]]:
    """Copy each planned byte range into its shard (with ``tails``, framed as a Parquet
    file: ``PAR1``, the range, and the shard's footer); returns the prefix and the shards."""
    if plan.whole_object:
        return source.parent_prefix, [Shard(source.name, source.uri, 0, plan.size, plan.size)]
    total = sum(end - start for start, end in plan.ranges)
    done = 0
    lock = Lock()

    def on_part(size: int) -> None:
        nonlocal done
        with lock:
            done += size
            if progress is not None:
                progress(done, total)

    def copy(number: int, start: int, end: int) -> Shard:
        name = shard_name(source.name, number)
        writer = sink.open(name)
        if tails:
            copy_framed(source, writer, start, end, tails[number], on_part)
        else:
            source.copy_to(writer, start, end, on_part)
        return Shard(name, sink.uri(name), start, end, writer.finish())

    pool = ThreadPoolExecutor(min(source.copy_workers, len(plan.ranges)))
    try:
        futures = [pool.submit(copy, n, start, end) for n, (start, end) in enumerate(plan.ranges)]
        for future in as_completed(futures):
            future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return sink.prefix, [future.result() for future in futures]
