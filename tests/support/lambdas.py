"""The Lambda handlers of ``lambda/``, loaded as the runtime loads them (a file at the asset
root, not a package module)."""

import importlib.util
from pathlib import Path
from types import ModuleType

LAMBDA_DIR = Path(__file__).resolve().parents[2] / "lambda"


def load_handler(name: str) -> ModuleType:
    """The module ``lambda/<name>.py``."""
    spec = importlib.util.spec_from_file_location(f"lambda_{name}", LAMBDA_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
