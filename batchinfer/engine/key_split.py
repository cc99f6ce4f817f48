"""How a processing job's inputs are shared among its instances: by key (ShardedByS3Key, P4: each
instance gets its own disjoint share of the objects)."""

from typing import Protocol, TypeVar


class _Keyed(Protocol):
    @property
    def name(self) -> str: ...  # read-only: frozen dataclasses have it


Keyed = TypeVar("Keyed", bound=_Keyed)


def shard_by_key(files: list[Keyed], instances: int) -> list[list[Keyed]]:
    """Disjoint, complete assignment of files (sorted by key) to instances (P4)."""
    ordered = sorted(files, key=lambda f: f.name)
    return [ordered[i::instances] for i in range(instances)]
