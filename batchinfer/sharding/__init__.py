"""Line-aligned splitting of any-size input into shards (spec R3: each input object goes whole to
one instance; R4: a key prefix or a ManifestFile selects the input objects; R6: what a record is
under each SplitType; R11: Gzip input is decompressed and its output written plain).

``plan_shards`` computes cut points from small reads; ``split`` materialises them for a
local file or an S3 object and writes a SageMaker ManifestFile and a ``ShardIndex``.
Lambda-side code: standard library and boto3 only.
"""

from batchinfer.sharding.auto import auto_shard_count
from batchinfer.sharding.index import Shard, ShardIndex
from batchinfer.sharding.names import shard_name
from batchinfer.sharding.planner import ShardPlan, plan_shards
from batchinfer.sharding.splitter import split

__all__ = [
    "Shard",
    "ShardIndex",
    "ShardPlan",
    "auto_shard_count",
    "plan_shards",
    "shard_name",
    "split",
]
