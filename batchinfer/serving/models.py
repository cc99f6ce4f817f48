"""Loading the model files the default ``model_fn`` understands, and the predict method to call.

- ``model.joblib`` / ``model.pkl`` (any name ending so): a pickled scikit-learn estimator or
  pipeline, or an XGBoost/LightGBM scikit-learn wrapper, loaded with joblib;
- ``*.json`` / ``*.ubj``: an XGBoost model. Saved from ``XGBClassifier``/``XGBRegressor``/
  ``XGBRanker`` it loads as that wrapper (``predict`` gives labels, ``predict_proba``
  probabilities); saved from a plain ``Booster`` its ``predict`` is the objective's output
  (probabilities for ``binary:logistic``), as in SageMaker's XGBoost container;
- ``*.txt``: a LightGBM ``Booster``; ``predict`` is the objective's output;
- ``*.pt`` / ``*.pth``: a TorchScript module, and ``*.onnx``: an ONNX model
  (:mod:`~batchinfer.serving.tensor_models`); ``predict`` is one forward pass.

``model.<ext>`` wins when present; otherwise the directory must hold exactly one such file.
The environment variable ``BATCHINFER_PREDICT_METHOD`` picks the method the default
``predict_fn`` calls: ``predict`` (default), ``predict_proba``, ``predict_log_proba`` or
``decision_function``.
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from batchinfer.extras import import_extra
from batchinfer.model_artifact import (
    MODEL_FILE_KINDS,
    default_model_file,
    model_file_kinds,
    model_files,
)
from batchinfer.serving.server_errors import ModelLoadError
from batchinfer.serving.tensor_models import load_onnx, load_torchscript

PREDICT_METHOD_VAR = "BATCHINFER_PREDICT_METHOD"
PREDICT_METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function")


@dataclass(frozen=True)
class BoosterModel:
    """A plain XGBoost or LightGBM booster behind the estimator interface: ``predict`` only."""

    booster: Any
    n_features_in_: int
    # xgboost's inplace_predict or LightGBM's predict: their declared results include other
    # shapes (sparse, lists) than the array they answer for these models' plain features.
    _predict: Callable[[Any], Any]
    # The names the booster was trained with (None when it has none): it then gets a
    # DataFrame of those columns (serving.tables).
    feature_names_in_: tuple[str, ...] | None = None

    def predict(self, features: Any) -> np.ndarray:
        return self._predict(features)


def _load_joblib(path: Path) -> Any:
    import joblib

    return joblib.load(path)


def _load_xgboost(path: Path) -> Any:
    xgboost = import_extra("xgboost")

    booster = xgboost.Booster()
    booster.load_model(path)
    meta = json.loads(booster.attr("scikit_learn") or "{}")
    wrapper = {
        "classifier": xgboost.XGBClassifier,
        "regressor": xgboost.XGBRegressor,
        "ranker": xgboost.XGBRanker,
    }.get(meta.get("_estimator_type"))
    if wrapper is None:
        names = booster.feature_names
        return BoosterModel(
            booster,
            booster.num_features(),
            booster.inplace_predict,
            tuple(names) if names else None,
        )
    model = wrapper()
    model.load_model(path)
    return model


def _load_lightgbm(path: Path) -> Any:
    lightgbm = import_extra("lightgbm")

    booster = lightgbm.Booster(model_file=str(path))
    names = booster.feature_name()
    # LightGBM names unnamed features Column_0, Column_1, ...: those are positions, not names.
    named = names != [f"Column_{i}" for i in range(len(names))]
    return BoosterModel(
        booster, booster.num_feature(), booster.predict, tuple(names) if named else None
    )


_LOADERS_BY_KIND: dict[str, Callable[[Path], Any]] = {
    "scikit-learn": _load_joblib,
    "XGBoost": _load_xgboost,
    "LightGBM": _load_lightgbm,
    "TorchScript": load_torchscript,
    "ONNX": load_onnx,
}
LOADERS = {suffix: _LOADERS_BY_KIND[kind] for suffix, kind in MODEL_FILE_KINDS.items()}


def find_model_file(model_dir: Path) -> Path:
    """The model file of ``model_dir``: ``model.<ext>`` first, else its only model file."""
    found = default_model_file(model_dir)
    if found is not None:
        return found
    found_names = ", ".join(path.name for path in model_files(model_dir)) or "no such file"
    raise ModelLoadError(
        f"{model_dir}: expected one model file ({model_file_kinds()}), found {found_names}; "
        "or define model_fn in inference.py"
    )


def load_model(model_dir: Path) -> Any:
    """Load the model file of ``model_dir`` (see the module docstring)."""
    path = find_model_file(model_dir)
    try:
        return LOADERS[path.suffix](path)
    except Exception as exc:
        raise ModelLoadError(f"{path}: cannot be loaded: {type(exc).__name__}: {exc}") from exc


def predict_method(model: Any, env: Mapping[str, str]) -> str:
    """The method the default ``predict_fn`` calls, from ``BATCHINFER_PREDICT_METHOD``."""
    method = env.get(PREDICT_METHOD_VAR, "predict").strip() or "predict"
    if method not in PREDICT_METHODS:
        raise ModelLoadError(
            f"{PREDICT_METHOD_VAR}={method!r} is not one of {', '.join(PREDICT_METHODS)}"
        )
    if not callable(getattr(model, method, None)):
        raise ModelLoadError(
            f"{PREDICT_METHOD_VAR}={method}: the model ({type(model).__name__}) has no {method}"
        )
    return method
