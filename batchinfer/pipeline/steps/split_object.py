"""SplitObject: one item of the split Map, one input object into line-aligned shards under
the run's shard prefix, with its ManifestFile and shard index (:mod:`batchinfer.sharding`).

Every job input sits under the run's shard prefix (one ManifestFile prefix, R4: a key prefix
or a ManifestFile selects the input objects): an object that needed no split (its index's one
shard is the object itself) is copied there server-side, in the item's own invocation, by
the version the split measured (CopySourceIfMatch with the index's ETag: a newer version
written meanwhile fails the item, naming the object). After a split job, CopyUnsplit does the
same from the index the job wrote.
"""

from typing import Any

from batchinfer.errors import InputError
from batchinfer.pipeline.contract.state import LISTED_SHARDS, SplitResult, SplitTask
from batchinfer.pipeline.storage.merge import copy_pinned
from batchinfer.pipeline.storage.shard_indexes import split_index
from batchinfer.sharding import ShardIndex, split
from batchinfer.sharding.s3 import source_errors
from batchinfer.uris import parse_s3_uri


def split_object(task: SplitTask, *, s3: Any) -> SplitResult:
    """Split ``task.input`` (or copy it whole); where its index is, and its shard list when
    it is short."""
    index = split(
        task.input,
        task.output,
        shards=task.shards,
        shard_size=task.shard_size,
        header=task.header,
        header_sha256=task.header_sha256,
        compression_type=task.compression_type,
        s3_client=s3,
        rows=task.rows,
    )
    copy_unsplit(s3, index, task.output)
    return split_result(task.input, index)


def split_result(input_uri: str, index: ShardIndex) -> SplitResult:
    """What the split of ``input_uri`` answers for its ``index``: scalars, and the shard list
    when it has at most LISTED_SHARDS shards."""
    listed = len(index.shards) <= LISTED_SHARDS
    return SplitResult(
        input=input_uri,
        index=index.location,
        manifest=index.manifest,
        shards=len(index.shards),
        source=index.source,
        etag=index.etag,
        compression_type=index.compression,
        copied=index.uris != [index.source],
        shard_list=[[shard.name, shard.size] for shard in index.shards] if listed else None,
    )


def copy_unsplit_object(input_uri: str, folder: str, *, s3: Any) -> None:
    """After a split job: copy ``input_uri`` into ``folder`` if its split left it whole."""
    copy_unsplit(s3, split_index(s3, input_uri, folder), folder)


def copy_unsplit(s3: Any, index: ShardIndex, folder: str) -> None:
    """Copy the object of ``index`` into ``folder`` under its own name when its one shard is
    the object itself, pinned to the ETag the split measured."""
    if index.uris != [index.source]:
        return
    if index.etag is None:
        raise InputError(f"{index.source}: its shard index records no ETag to copy it by")
    (shard,) = index.shards
    target = parse_s3_uri(folder).child(shard.name)
    with source_errors(index.source, index.etag):
        copy_pinned(s3, parse_s3_uri(index.source), target, index.etag, shard.size)
