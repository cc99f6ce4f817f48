"""The one moto release whose internals the test harness corrects or replaces
(``offline/moto_fixes.py``, ``quick_s3.py``); requirements-dev.txt pins it."""

import moto

MOTO_VERSION = "5.2.5"


def require_moto(module: str, what: str) -> None:
    """Refuse to import ``module``, which changes ``what`` of moto, under another moto than
    :data:`MOTO_VERSION`: its changes are written against that release's code."""
    if moto.__version__ != MOTO_VERSION:
        raise ImportError(
            f"{module} changes {what} of moto {MOTO_VERSION}; moto {moto.__version__} is "
            "installed (see requirements-dev.txt)"
        )
