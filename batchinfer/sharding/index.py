"""The shard index (JSON) and the SageMaker ManifestFile (spec R4: a key prefix or a ManifestFile
selects the input objects) written with the shards."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchinfer.errors import InputError
from batchinfer.uris import is_s3_uri, parse_s3_uri

INDEX_VERSION = 1


@dataclass(frozen=True)
class Shard:
    """One shard: ``name`` relative to the index prefix (its manifest entry), ``uri`` the
    full local path or ``s3://`` URI, ``[start, end)`` its span of the source's data
    (decompressed data for gzip), ``size`` the bytes of the shard as stored."""

    name: str
    uri: str
    start: int
    end: int
    size: int


@dataclass(frozen=True)
class ShardIndex:
    """What a split produced, in shard order.

    ``source``/``etag``/``source_size`` identify the input object; ``compression`` is the
    CompressionType of source and shards (``None`` or ``Gzip``); ``header`` is the dropped
    header line or None; ``prefix`` + each shard name is the shard's location. When the
    input needed no copy, the single shard is the source object itself. ``location`` and
    ``manifest`` are where the index and the ManifestFile are stored.
    """

    source: str
    etag: str | None
    source_size: int
    compression: str
    header: bytes | None
    prefix: str
    shards: list[Shard]
    location: str = ""
    manifest: str = ""

    @property
    def names(self) -> list[str]:
        return [shard.name for shard in self.shards]

    @property
    def uris(self) -> list[str]:
        return [shard.uri for shard in self.shards]

    def manifest_entries(self) -> list[Any]:
        """The ManifestFile content: ``[{"prefix": prefix}, name, ...]`` (spec R4)."""
        return [{"prefix": self.prefix}, *self.names]

    def to_json(self) -> str:
        header = None if self.header is None else self.header.decode("utf-8", "surrogateescape")
        return json.dumps(
            {
                "version": INDEX_VERSION,
                "source": self.source,
                "etag": self.etag,
                "source_size": self.source_size,
                "compression": self.compression,
                "header": header,
                "prefix": self.prefix,
                "manifest": self.manifest,
                "shards": [vars(shard) for shard in self.shards],
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str | bytes, *, location: str = "") -> "ShardIndex":
        try:
            data = json.loads(text)
            header = data["header"]
            return cls(
                source=data["source"],
                etag=data["etag"],
                source_size=data["source_size"],
                compression=data["compression"],
                header=None if header is None else header.encode("utf-8", "surrogateescape"),
                prefix=data["prefix"],
                shards=[Shard(**shard) for shard in data["shards"]],
                location=location,
                manifest=data["manifest"],
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{location or 'shard index'} is not a shard index: {exc}") from exc

    @classmethod
    def load(cls, path_or_uri: str, *, s3_client: Any = None) -> "ShardIndex":
        """Read an index from a local path or an ``s3://`` URI."""
        if is_s3_uri(path_or_uri):
            location = parse_s3_uri(path_or_uri, field="index")
            from batchinfer.sharding.s3 import source_errors

            if s3_client is None:
                import boto3

                s3_client = boto3.client("s3")
            with source_errors(path_or_uri, None):
                body = s3_client.get_object(Bucket=location.bucket, Key=location.key)["Body"]
            return cls.from_json(body.read(), location=path_or_uri)
        try:
            text = Path(path_or_uri).read_bytes()
        except FileNotFoundError:
            raise InputError(f"{path_or_uri}: shard index not found") from None
        return cls.from_json(text, location=path_or_uri)
