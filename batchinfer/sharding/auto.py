"""How many shards an object of a given size needs so that every instance works (spec R3)."""

AUTO_SHARD_SIZE = 64 * 1024 * 1024
MIN_SPLIT_SIZE = 8 * 1024 * 1024


def auto_shard_count(size: int, instances: int, *, shard_size: int = AUTO_SHARD_SIZE) -> int:
    """Shards of about ``shard_size`` bytes, rounded up to a multiple of ``instances`` so
    the instances finish together; 1 (no split) for an object under 8 MiB."""
    if size < MIN_SPLIT_SIZE:
        return 1
    by_size = -(-size // shard_size)
    return -(-by_size // instances) * instances
