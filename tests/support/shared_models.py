"""botocore's service models read once per test process, not once per session.

moto gives every test a fresh default boto3 session, and the offline stack makes a session of
its own, so each test would read and parse the JSON models of every service it touches again
(the SageMaker model alone is megabytes). Every ``botocore.loaders.Loader`` here shares one
cache instead, as every client of one session does: the same models, read once."""

from typing import Any

from botocore.loaders import Loader

_CACHES: dict[tuple[Any, ...], dict[Any, Any]] = {}


def share_loaded_models() -> None:
    """From now on, Loaders with the same search paths and extras share their cache."""
    if getattr(Loader.__init__, "shares_models", False):
        return
    original = Loader.__init__

    def init(self: Loader, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        key = (tuple(self.search_paths), tuple(self.extras_types))
        self._cache = _CACHES.setdefault(key, {})

    init.shares_models = True  # type: ignore[attr-defined]
    Loader.__init__ = init  # type: ignore[method-assign]
