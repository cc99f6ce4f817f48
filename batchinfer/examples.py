"""The example model and input data used by the demo, the benchmarks and the image smoke test.

The model is scikit-learn's ``GradientBoostingClassifier`` with 100 trees, trained on the
diabetes data set that ships with scikit-learn (10 numeric features in their original units;
the target, disease progression, binarised at its median). Nothing is downloaded.
(``GradientBoostingClassifier`` predicts several times faster than
``HistGradientBoostingClassifier`` on batches of this size, so it is the one served.)

With a framework (``train_framework_model``), the same data trains a scikit-learn, XGBoost
or LightGBM classifier, saved in that framework's own format beside a ``code/inference.py``
of SageMaker's handler protocol (:mod:`batchinfer.example_handlers`) that answers the
probability of the positive class; or a PyTorch network that answers it, saved as
TorchScript or ONNX for the default handler, with no ``inference.py``
(:mod:`batchinfer.example_networks`).

Example rows are data set rows drawn at random, with Gaussian noise of 5 % of each
feature's spread, written with each feature's original precision: ~45 bytes per CSV row.
JSON Lines records are objects, ``{"id": <row number>, "features": [...]}``.
Large files repeat rows of a pool of 200,000 distinct ones, so a gigabyte takes seconds.
"""

from collections.abc import Callable
from pathlib import Path

import numpy as np

from batchinfer.example_handlers import FRAMEWORKS
from batchinfer.example_networks import NETWORK_FILES
from batchinfer.extras import import_extra
from batchinfer.serving.codecs import encode_csv, encode_jsonlines

FEATURES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")
MODEL_FILE = "model.joblib"
_CHUNK_ROWS = 1_000_000
_POOL_ROWS = 200_000
_NOISE = 0.05
# The frameworks `batchinfer example --framework` trains a model in.
EXAMPLE_FRAMEWORKS = (*FRAMEWORKS, *NETWORK_FILES)


def _dataset() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_diabetes

    features, target = load_diabetes(return_X_y=True, scaled=False)
    return features, (target > np.median(target)).astype(np.int64)


def train_example_model(model_dir: Path) -> Path:
    """Train the example classifier, save it as ``model_dir/model.joblib``, return that path."""
    import joblib
    from sklearn.ensemble import GradientBoostingClassifier

    features, labels = _dataset()
    model = GradientBoostingClassifier(n_estimators=100, random_state=0).fit(features, labels)
    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / MODEL_FILE
    joblib.dump(model, path)
    return path


def train_framework_model(model_dir: Path, framework: str) -> Path:
    """Train the example classifier with ``framework`` (one of :data:`EXAMPLE_FRAMEWORKS`)
    and save it in that framework's format: with its ``code/inference.py`` (whose path is
    returned), or for ``pytorch`` and ``onnx`` as the model file alone (whose path is
    returned)."""
    from batchinfer.example_handlers import write_handler
    from batchinfer.example_networks import save_network

    if framework not in EXAMPLE_FRAMEWORKS:
        raise ValueError(
            f"framework must be one of {', '.join(EXAMPLE_FRAMEWORKS)}, not {framework!r}"
        )
    model_dir.mkdir(parents=True, exist_ok=True)
    if framework in NETWORK_FILES:
        return save_network(model_dir, framework, *_dataset())
    if framework == "sklearn":
        train_example_model(model_dir)
    else:
        features, labels = _dataset()
        if framework == "xgboost":
            xgb = import_extra("xgboost")
            params = {"objective": "binary:logistic", "max_depth": 3, "seed": 0, "nthread": 1}
            booster = xgb.train(params, xgb.DMatrix(features, labels), num_boost_round=100)
            booster.save_model(str(model_dir / "model.json"))
        else:
            lgb = import_extra("lightgbm")
            params = {"objective": "binary", "verbose": -1, "seed": 0, "num_threads": 1}
            model = lgb.train(params, lgb.Dataset(features, labels), num_boost_round=100)
            model.save_model(str(model_dir / "model.txt"))
    return write_handler(framework, model_dir / "code")


def _decimals(column: np.ndarray) -> int:
    """The fewest decimals that represent every value of ``column`` exactly."""
    return next(d for d in range(8) if np.array_equal(np.round(column, d), column))


def _noisy_rows(count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` data set rows drawn at random, with noise, at each feature's precision."""
    features, _ = _dataset()
    spread = features.std(axis=0) * _NOISE
    spread[FEATURES.index("sex")] = 0.0  # a category: keep its two values
    rows = features[rng.integers(0, len(features), count)]
    rows += rng.standard_normal(rows.shape) * spread
    np.clip(rows, features.min(axis=0), features.max(axis=0), out=rows)
    for j in range(features.shape[1]):
        rows[:, j] = np.round(rows[:, j], _decimals(features[:, j]))
    return rows


def _write_lines(
    path: Path,
    rows: int,
    seed: int,
    encode: Callable[[np.ndarray], bytes],
    label: Callable[[int, bytes], bytes] | None = None,
) -> None:
    """Write ``rows`` encoded example records: a pool of up to ``_POOL_ROWS`` distinct noisy
    rows is encoded once, then lines are drawn from it at random (fast for gigabytes).
    ``label`` rewrites each line given its row number (from 0)."""
    rng = np.random.default_rng(seed)
    pool = encode(_noisy_rows(min(rows, _POOL_ROWS), rng)).split(b"\n")[:-1]
    with open(path, "wb") as out:
        for start in range(0, rows, _CHUNK_ROWS):
            count = min(_CHUNK_ROWS, rows - start)
            if rows <= _POOL_ROWS:
                lines = pool
            else:
                lines = [pool[i] for i in rng.integers(0, len(pool), count).tolist()]
            if label is not None:
                lines = [label(start + n, line) for n, line in enumerate(lines)]
            out.write(b"".join(line + b"\n" for line in lines))


def write_example_csv(path: Path, rows: int, seed: int = 0) -> None:
    """Write ``rows`` example records as headerless CSV, one per line."""
    _write_lines(path, rows, seed, encode_csv)


def write_example_jsonl(path: Path, rows: int, seed: int = 0) -> None:
    """Write ``rows`` example records as JSON Lines: ``{"id": n, "features": [10 values]}``."""
    _write_lines(path, rows, seed, encode_jsonlines, _labelled)


def _labelled(number: int, features: bytes) -> bytes:
    return b'{"id":%d,"features":%s}' % (number, features)
