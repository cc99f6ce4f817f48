"""The default handler gives a model that knows its features' names a DataFrame of them, by
name: scikit-learn, XGBoost (wrapper and plain booster) and LightGBM boosters fitted on a
DataFrame; the header's names come in the server's environment (BATCHINFER_CSV_COLUMNS), in
any order. Values keep their types; text in another charset is decoded from it."""

import json
from pathlib import Path

import joblib
import lightgbm
import numpy as np
import pandas as pd
import pytest
import xgboost
from sklearn.linear_model import LogisticRegression

from batchinfer.serving.handlers import load_handler
from batchinfer.serving.server_errors import RequestError

COLUMNS = {"BATCHINFER_CSV_COLUMNS": json.dumps(["c", "a", "b"])}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({name: rng.normal(size=200) for name in "abc"})


def _labels(frame: pd.DataFrame) -> pd.Series:
    return (frame.a + 2 * frame.b > 0).astype(int)


def _save(directory: Path, kind: str, frame: pd.DataFrame) -> tuple[Path, np.ndarray]:
    """A model of ``kind`` fitted on ``frame`` in ``directory``, and its own predictions."""
    directory.mkdir()
    y = _labels(frame)
    if kind == "sklearn":
        model = LogisticRegression().fit(frame, y)
        joblib.dump(model, directory / "model.joblib")
        return directory, model.predict(frame)
    if kind == "xgboost-wrapper":
        wrapper = xgboost.XGBClassifier(n_estimators=5).fit(frame, y)
        wrapper.save_model(directory / "model.json")
        return directory, wrapper.predict(frame)
    if kind == "xgboost-booster":
        booster = xgboost.train(
            {"objective": "binary:logistic"}, xgboost.DMatrix(frame, label=y), 5
        )
        booster.save_model(directory / "model.json")
        return directory, booster.predict(xgboost.DMatrix(frame))
    params = {"objective": "binary", "verbose": -1}
    lgbm = lightgbm.train(params, lightgbm.Dataset(frame, label=y), 5)
    lgbm.save_model(str(directory / "model.txt"))
    return directory, lgbm.predict(frame)


@pytest.mark.parametrize("kind", ["sklearn", "xgboost-wrapper", "xgboost-booster", "lightgbm"])
def test_columns_in_another_order_reach_the_model_by_name(tmp_path, frame, kind):
    model_dir, expected = _save(tmp_path / kind, kind, frame)
    handler = load_handler(model_dir, COLUMNS)
    body = frame[["c", "a", "b"]].to_csv(index=False, header=False).encode()
    answer, _ = handler.invoke(body, "text/csv", "text/csv")
    assert np.allclose(np.array(answer.split(), dtype=float), expected, atol=1e-6)


def test_lightgbm_positions_are_not_names(tmp_path, frame):
    """A booster trained on an array calls its features Column_0, ...: positions, so it
    keeps the numeric array path."""
    y = _labels(frame)
    booster = lightgbm.train(
        {"objective": "binary", "verbose": -1}, lightgbm.Dataset(frame.to_numpy(), label=y), 5
    )
    (tmp_path / "m").mkdir()
    booster.save_model(str(tmp_path / "m" / "model.txt"))
    handler = load_handler(tmp_path / "m", {})
    assert handler.model.feature_names_in_ is None


@pytest.fixture(scope="module")
def echo_types(tmp_path_factory) -> Path:
    """A model that answers, per record, the dtype kinds of the frame it received."""
    model_dir = tmp_path_factory.mktemp("echo")
    (model_dir / "code").mkdir()
    (model_dir / "code" / "inference.py").write_text(
        "class Echo:\n"
        "    feature_names_in_ = ['when', 'flag', 'n', 'label']\n"
        "    def predict(self, frame):\n"
        "        kinds = ''.join(frame.dtypes.map(lambda d: d.kind))\n"
        "        return [kinds + ':' + str(list(frame.columns))] * len(frame)\n"
        "def model_fn(model_dir):\n"
        "    return Echo()\n"
    )
    return model_dir


def test_values_keep_their_types_and_dates_stay_text(echo_types):
    handler = load_handler(echo_types, {})
    answer, _ = handler.invoke(b"2024-01-02,true,3,x\n2024-02-03,false,,y\n", "text/csv", None)
    kinds, columns = answer.decode().splitlines()[0].strip('"').split(":", 1)
    assert columns == "['when', 'flag', 'n', 'label']"
    assert kinds[0] in "OT" and kinds[1] == "b" and kinds[2] == "f" and kinds[3] in "OT"


def test_text_in_a_declared_charset_is_decoded_and_undeclared_is_refused(echo_types):
    handler = load_handler(echo_types, {})
    body = "2024-01-02,true,3,Zürich\n".encode("latin-1")
    answer, _ = handler.invoke(body, "text/csv; charset=latin-1", None)
    assert answer
    with pytest.raises(RequestError, match="text/csv record 1 is not UTF-8 text"):
        handler.invoke(body, "text/csv", None)
    with pytest.raises(RequestError, match="'klingon' is not a text encoding"):
        handler.invoke(body, "text/csv; charset=klingon", None)


def test_json_records_mixing_objects_and_arrays_are_refused(echo_types):
    handler = load_handler(echo_types, {})
    body = b'{"when": "x", "flag": true, "n": 1, "label": "a"}\n[1, 2, 3, 4]\n'
    with pytest.raises(RequestError, match="record 2 is not an object where record 1 is one"):
        handler.invoke(body, "application/jsonlines", None)


def test_json_objects_for_a_model_without_names_are_refused(tmp_path, frame):
    model_dir, _ = _save(tmp_path / "arr", "sklearn", frame)
    model = joblib.load(model_dir / "model.joblib")
    del model.feature_names_in_
    joblib.dump(model, model_dir / "model.joblib")
    handler = load_handler(model_dir, {})
    with pytest.raises(RequestError, match="is an object: its keys name features"):
        handler.invoke(b'{"a": 1, "b": 2, "c": 3}\n', "application/jsonlines", None)


@pytest.fixture(scope="module")
def categorical_frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    cities = pd.Categorical(rng.choice(["Paris", "Lyon", "Nice"], 400))
    return pd.DataFrame({"a": rng.normal(size=400), "city": cities, "b": rng.normal(size=400)})


def _save_categorical(directory: Path, kind: str, frame: pd.DataFrame):
    """A booster trained on a frame with a pandas category column, and its predict."""
    directory.mkdir()
    y = ((frame.a > 0) | (frame.city == "Lyon")).astype(int)
    if kind == "lightgbm-booster":
        booster = lightgbm.train(
            {"objective": "binary", "verbose": -1}, lightgbm.Dataset(frame, label=y), 10
        )
        booster.save_model(str(directory / "model.txt"))
        return booster.predict
    if kind == "lightgbm-wrapper":
        wrapper = lightgbm.LGBMClassifier(n_estimators=10, verbose=-1).fit(frame, y)
        joblib.dump(wrapper, directory / "model.joblib")
        return wrapper.predict
    xgb = xgboost.XGBClassifier(n_estimators=10, enable_categorical=True).fit(frame, y)
    xgb.save_model(directory / "model.json")
    return xgb.predict


@pytest.mark.parametrize("kind", ["lightgbm-booster", "lightgbm-wrapper", "xgboost-wrapper"])
def test_boosters_trained_on_pandas_categories_get_categories(tmp_path, categorical_frame, kind):
    """The text column becomes a category column, matched by value: a request lacking one
    of the trained categories still predicts as the model does in process."""
    predict = _save_categorical(tmp_path / kind, kind, categorical_frame)
    batch = categorical_frame[categorical_frame.city != "Lyon"].head(60)
    body = batch[["b", "city", "a"]]
    env = {"BATCHINFER_CSV_COLUMNS": json.dumps(["b", "city", "a"])}
    handler = load_handler(tmp_path / kind, env)
    answer, _ = handler.invoke(body.to_csv(index=False, header=False).encode(), "text/csv", None)
    assert np.allclose(np.array(answer.split(), dtype=float), predict(batch))
