"""A model that tells whether scikit-learn was already imported in its worker when the
model was loaded: each prediction is 1 if it was, else 0. Pickled (``joblib.dump``) as a
call to :func:`loaded`, which looks as the worker unpickles it; importable in a worker
whose PYTHONPATH holds the repository root."""

import sys
from typing import Any

import numpy as np


def loaded() -> "LoadProbe":
    return LoadProbe("sklearn" in sys.modules)


class LoadProbe:
    def __init__(self, sklearn_imported: bool) -> None:
        self.sklearn_imported = sklearn_imported

    def __reduce__(self) -> tuple[Any, ...]:
        return (loaded, ())

    def predict(self, features: Any) -> np.ndarray:
        return np.full(len(features), int(self.sklearn_imported))
