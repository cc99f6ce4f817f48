"""A model fitted on a pandas DataFrame, as data scientists save one: a scikit-learn Pipeline
whose ColumnTransformer one-hot encodes a text column and scales the numeric ones, saved with
joblib; and CSV inputs with a header row that names its columns."""

from pathlib import Path

import joblib
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

COLUMNS = ["color", "size", "weight"]


def frame(rows: int, seed: int = 0) -> pd.DataFrame:
    """``rows`` records of a text column (``color``) and two numeric ones."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "color": rng.choice(["red", "green", "blue"], rows),
            "size": rng.normal(10, 2, rows).round(3),
            "weight": rng.normal(5, 1, rows).round(3),
        }
    )


def write_frame_model(model_dir: Path) -> Path:
    """The Pipeline fitted on :func:`frame`, saved as ``model_dir/model.joblib``."""
    data = frame(200)
    features = ColumnTransformer(
        [
            ("color", OneHotEncoder(handle_unknown="ignore"), ["color"]),
            ("numbers", StandardScaler(), ["size", "weight"]),
        ]
    )
    model = Pipeline([("features", features), ("regression", LinearRegression())])
    model.fit(data, data["size"] * 2 + (data["color"] == "red"))
    model_dir.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, model_dir / "model.joblib")
    return model_dir


def write_csv(path: Path, data: pd.DataFrame) -> Path:
    """``data`` as a CSV file with its header row."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data.to_csv(path, index=False)
    return path
