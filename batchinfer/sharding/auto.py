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


def parquet_split(
    size: int, shards: int | Literal["auto"] | None, max_payload_bytes: int | None
) -> dict[str, int] | None:
    """What ``--shards`` asks of a Parquet input of ``size`` bytes, as :func:`split`'s
    arguments (None: it stays whole). A count is taken as it is; ``auto`` packs row groups
    into shards of at most :data:`AUTO_SHARD_SIZE` bytes and, as each shard is one request,
    of at most ``max_payload_bytes`` (MaxPayloadInMB)."""
    if shards is None or size == 0:
        return None
    if shards != "auto":
        return None if shards == 1 else {"shards": shards}
    limit = parquet_shard_size(AUTO_SHARD_SIZE, max_payload_bytes)
    return None if size <= limit else {"shard_size": limit}


def parquet_shard_size(target: int, max_payload_bytes: int | None) -> int:
    """The bytes a Parquet shard may hold: ``target``, and no more than MaxPayloadInMB
    (``max_payload_bytes``; None: no limit), since a Parquet shard is one request."""
    return target if max_payload_bytes is None else min(target, max_payload_bytes)
