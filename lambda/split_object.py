"""Step Functions task: split one S3 object into shards; returns where the index is.

Event: ``{"input": "s3://b/in/data.csv", "output": "s3://b/shards/", "shards": 16}`` or
``"shard_size": "64MiB"`` (or bytes) instead of ``shards``; optional ``"header": true``
and ``"compression_type": "Gzip"``. The result holds only scalars (the shard list stays in
the index object: state payloads are limited to 256 KB).
"""

from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.sharding import split
from batchinfer.units import parse_size
from batchinfer.uris import is_s3_uri

_KEYS = {"input", "output", "shards", "shard_size", "header", "compression_type"}


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    unknown = sorted(set(event) - _KEYS)
    if unknown:
        raise ValidationError(f"split event: unknown key(s) {', '.join(unknown)}")
    for key in ("input", "output"):
        if not isinstance(event.get(key), str) or not is_s3_uri(event[key]):
            raise ValidationError(f"split event: {key} must be an s3:// URI")
    shards = event.get("shards")
    if shards is not None and (isinstance(shards, bool) or not isinstance(shards, int)):
        raise ValidationError(f"split event: shards must be an integer, not {shards!r}")
    shard_size = event.get("shard_size")
    if isinstance(shard_size, str):
        shard_size = parse_size(shard_size, field="shard_size")
    elif shard_size is not None and (
        isinstance(shard_size, bool) or not isinstance(shard_size, int)
    ):
        raise ValidationError(f"split event: shard_size must be a size, not {shard_size!r}")
    header = event.get("header", False)
    if not isinstance(header, bool):
        raise ValidationError(f"split event: header must be true or false, not {header!r}")
    index = split(
        event["input"],
        event["output"],
        shards=shards,
        shard_size=shard_size,
        header=header,
        compression_type=event.get("compression_type", "None"),
    )
    return {
        "index": index.location,
        "manifest": index.manifest,
        "shards": len(index.shards),
        "source": index.source,
        "etag": index.etag,
        "compression_type": index.compression,
        "copied": index.uris != [index.source],
    }
