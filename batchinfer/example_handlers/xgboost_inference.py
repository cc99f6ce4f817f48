"""The XGBoost example model: a binary:logistic Booster saved as JSON."""

import os

import xgboost as xgb
from example_records import input_fn, output_fn  # noqa: F401  (the protocol's functions)


def model_fn(model_dir):
    booster = xgb.Booster()
    booster.load_model(os.path.join(model_dir, "model.json"))
    return booster


def predict_fn(data, model):
    """The probability of the positive class (binary:logistic answers it)."""
    return model.predict(xgb.DMatrix(data))
