"""The LightGBM example model: a binary Booster saved as text."""

import os

import lightgbm as lgb
from example_records import input_fn, output_fn  # noqa: F401  (the protocol's functions)


def model_fn(model_dir):
    return lgb.Booster(model_file=os.path.join(model_dir, "model.txt"))


def predict_fn(data, model):
    """The probability of the positive class (the binary objective answers it)."""
    return model.predict(data)
