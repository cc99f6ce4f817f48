"""`--shards auto`: enough shards that every instance works (spec R3)."""

from batchinfer.sharding import auto_shard_count
from batchinfer.units import MIB


def test_small_objects_are_not_split():
    assert auto_shard_count(8 * MIB - 1, instances=4) == 1


def test_shards_are_about_64_mib_and_a_multiple_of_the_instance_count_r3():
    assert auto_shard_count(8 * MIB, instances=2) == 2
    assert auto_shard_count(300 * 1000 * 1000, instances=2) == 6  # 5 by size, rounded to 6
    assert auto_shard_count(1024 * MIB, instances=3) == 18  # 16 by size, rounded to 18
    assert auto_shard_count(1024 * MIB, instances=1, shard_size=256 * MIB) == 4
