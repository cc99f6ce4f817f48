"""The model frameworks of pyproject.toml's extras: importing one that is not installed says
which extra installs it."""

import importlib
from types import ModuleType

# top-level module -> the extra that installs it
EXTRA_OF = {
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "torch": "torch",
    "onnxruntime": "onnx",
    "onnx": "onnx",
}


def import_extra(module: str) -> ModuleType:
    """Import ``module``; when it is not installed, a ModuleNotFoundError that names the
    ``pip install 'batchinfer[...]'`` that brings it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise ModuleNotFoundError(
            f"No module named {module!r}: pip install 'batchinfer[{EXTRA_OF[module]}]'",
            name=module,
        ) from None
