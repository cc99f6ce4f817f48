"""Customers as a table users score: numbers, text with commas and accents, and a
categorical column; and the most common tabular model, a scikit-learn Pipeline fitted on
them as a DataFrame (so it knows its features by name). The fixtures ``frame`` and
``pipeline_model`` serve them to the modules that import them."""

from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

FEATURES = ["age", "income", "city", "plan"]
ROWS = 240


def customers(rows: int = ROWS, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, rows),
            "income": rng.normal(50_000, 12_000, rows).round(2),
            "city": rng.choice(["Paris", "Lyon", "Nice, FR", "Saint-Étienne"], rows),
            "plan": rng.choice(["basic", "plus"], rows),
        }
    )


def write_pipeline_model(model: Path, frame: pd.DataFrame) -> Path:
    """One-hot categories, scaled numbers and a classifier, fitted on ``frame``, saved as
    ``model/model.joblib``."""
    pipeline = make_pipeline(
        ColumnTransformer(
            [
                ("categories", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"]),
                ("numbers", StandardScaler(), ["age", "income"]),
            ]
        ),
        LogisticRegression(),
    )
    target = (frame.age > 50) ^ (frame.city == "Lyon")
    pipeline.fit(frame, target.astype(int))
    model.mkdir(parents=True, exist_ok=True)
    joblib.dump(pipeline, model / "model.joblib")
    return model


@pytest.fixture(scope="session")
def frame() -> pd.DataFrame:
    """The customers the Pipeline is fitted on."""
    return customers()


@pytest.fixture(scope="session")
def pipeline_model(tmp_path_factory: pytest.TempPathFactory, frame: pd.DataFrame) -> Path:
    """The customers' Pipeline, fitted on ``frame``: a model directory."""
    return write_pipeline_model(tmp_path_factory.mktemp("pipeline") / "model", frame)
