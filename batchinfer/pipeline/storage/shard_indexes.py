"""What a split left for one input object, as Collect and MergeObject read it: its shard
index in its split task's folder (or, for Collect, the shard list its split answered), and
the names of its shards under the run's shard prefix
(R12: each input object gives one output named after it)."""

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from batchinfer.errors import InputError
from batchinfer.sharding import ShardIndex
from batchinfer.sharding.names import index_name
from batchinfer.uris import parse_s3_uri


def split_index(s3: Any, input_uri: str, folder: str) -> ShardIndex:
    """The shard index the split of ``input_uri`` wrote in ``folder`` (its split task's
    output); InputError naming the object when there is none."""
    name = index_name(posixpath.basename(parse_s3_uri(input_uri).key))
    try:
        return ShardIndex.load(parse_s3_uri(folder).child(name).uri, s3_client=s3)
    except InputError as exc:
        raise InputError(f"{input_uri}: the split left no shard index: {exc}") from None


@dataclass(frozen=True)
class SplitShards:
    """What Collect needs of one object's split: its shards' names (relative to its split
    task's folder) and sizes in shard order, and their CompressionType."""

    compression: str
    shards: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, index: ShardIndex) -> "SplitShards":
        return cls(index.compression, tuple((shard.name, shard.size) for shard in index.shards))


def shard_names(names: Iterable[str], folder: str, shards_prefix: str) -> list[str]:
    """The keys under ``shards_prefix`` of the shards ``names`` (relative to ``folder``), in
    shard order (an object that needed no split is one shard, copied into ``folder`` under
    its own name)."""
    return [folder[len(shards_prefix) :] + name for name in names]


def input_name(run_input: str, input_uri: str) -> str:
    """``input_uri``'s path under the run's input (up to its last ``/``): what its outputs
    are named after."""
    return input_uri[run_input.rfind("/") + 1 :]
