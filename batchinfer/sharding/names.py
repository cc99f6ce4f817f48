"""Names of the objects a split writes: shards, shard index and manifest."""

import posixpath

# Shard numbers are zero-padded to five digits so names sort in shard order.
MAX_SHARDS = 100_000


def split_extension(name: str) -> tuple[str, str]:
    """Split ``name`` into stem and extension, keeping ``.gz`` with the one before it.

    ``data.csv`` -> ``("data", ".csv")``; ``x.jsonl.gz`` -> ``("x", ".jsonl.gz")``.
    """
    gz = ".gz" if name.endswith(".gz") and len(name) > 3 else ""
    stem, ext = posixpath.splitext(name[: len(name) - len(gz)])
    return stem, ext + gz


def shard_name(input_name: str, number: int) -> str:
    """``data.csv`` and 0 -> ``data.part-00000.csv`` (the input's name and extension kept)."""
    stem, ext = split_extension(input_name)
    return f"{stem}.part-{number:05d}{ext}"


def index_name(input_name: str) -> str:
    """The shard index written next to the shards of ``input_name``."""
    return f"{input_name}.index.json"


def manifest_name(input_name: str) -> str:
    """The SageMaker ManifestFile (spec R4: a key prefix or a ManifestFile selects the input
    objects) written next to the shards of ``input_name``."""
    return f"{input_name}.manifest"
