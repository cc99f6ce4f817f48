"""How many shards an object of a given size needs so that every instance works (spec R3: each input
object goes whole to one instance)."""

from typing import Literal

AUTO_SHARD_SIZE = 64 * 1024 * 1024
MIN_SPLIT_SIZE = 8 * 1024 * 1024


def auto_shard_count(size: int, instances: int, *, shard_size: int = AUTO_SHARD_SIZE) -> int:
    """Shards of about ``shard_size`` bytes, rounded up to a multiple of ``instances`` so
    the instances finish together; 1 (no split) for an object under 8 MiB."""
    if size < MIN_SPLIT_SIZE:
        return 1
    by_size = -(-size // shard_size)
    return -(-by_size // instances) * instances


def requested_shards(size: int, shards: int | Literal["auto"] | None, instances: int) -> int:
    """The shard count ``--shards`` asks of an input of ``size`` bytes: 1 (no split) when
    not given or the input is empty, else the count itself or :func:`auto_shard_count`."""
    if shards is None or size == 0:
        return 1
    if shards == "auto":
        return auto_shard_count(size, instances)
    return shards
