"""SplitObject: one item of the split Map, one input object into line-aligned shards under
the run's shard prefix, with its ManifestFile and shard index (:mod:`batchinfer.sharding`)."""

from batchinfer.pipeline.contract.state import SplitResult, SplitTask
from batchinfer.sharding import split


def split_object(task: SplitTask) -> SplitResult:
    """Split ``task.input``; where its index is, and scalars only."""
    index = split(
        task.input,
        task.output,
        shards=task.shards,
        shard_size=task.shard_size,
        header=task.header,
        header_sha256=task.header_sha256,
        compression_type=task.compression_type,
    )
    return SplitResult(
        index=index.location,
        manifest=index.manifest,
        shards=len(index.shards),
        source=index.source,
        etag=index.etag,
        compression_type=index.compression,
        copied=index.uris != [index.source],
    )
