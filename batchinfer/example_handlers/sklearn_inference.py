"""The scikit-learn example model: a GradientBoostingClassifier saved with joblib."""

import os

import joblib
from example_records import input_fn, output_fn  # noqa: F401  (the protocol's functions)


def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))


def predict_fn(data, model):
    """The probability of the positive class."""
    return model.predict_proba(data)[:, 1]
