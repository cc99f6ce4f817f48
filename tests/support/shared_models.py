"""botocore's service models read once per test process, not once per session.

moto gives every test a fresh default boto3 session, and the offline stack makes a session of
its own, so each test would read and parse the JSON models of every service it touches again
(the SageMaker model alone is megabytes). Every ``botocore.loaders.Loader`` here shares one
cache with the Loaders of its class that search the same paths with the same extras, as every
client of one session shares its Loader's: the same models, read once."""

from typing import Any

from botocore.loaders import Loader

_CACHES: dict[tuple[Any, ...], dict[Any, Any]] = {}


def _shared_cache(loader: Loader) -> dict[Any, Any]:
    # Looked up at each use: boto3 adds its own data path to a Loader after creating it.
    key = (type(loader), tuple(loader.search_paths), tuple(loader.extras_types))
    return _CACHES.setdefault(key, {})


def share_loaded_models() -> None:
    """From now on, every Loader's cache is the one it shares (its own, set at its creation,
    is ignored)."""
    Loader._cache = property(_shared_cache, lambda _loader, _own: None)  # type: ignore[attr-defined]
