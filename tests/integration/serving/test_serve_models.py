"""The default model_fn for every supported model file: scikit-learn (joblib/pickle), XGBoost
(.json/.ubj, wrapper or plain Booster), LightGBM (.txt); predict_proba on request."""

import json
import pickle

import joblib
import lightgbm
import numpy as np
import pytest
import xgboost
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

RNG = np.random.default_rng(0)
FEATURES = RNG.normal(size=(300, 4))
LABELS = (FEATURES[:, 0] + FEATURES[:, 1] > 0).astype(int)
REQUEST = FEATURES[:7]


def _csv(rows: np.ndarray) -> bytes:
    return "".join(",".join(repr(v) for v in row) + "\n" for row in rows.tolist()).encode()


def _numbers(reply) -> np.ndarray:
    assert reply.status == 200, reply.text
    return np.array([[float(v) for v in line.split(",")] for line in reply.text.splitlines()])


def test_sklearn_pipeline_pickle_with_predict_proba(serve, tmp_path):
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(FEATURES, LABELS)
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(model))
    client = serve(tmp_path, env={"BATCHINFER_PREDICT_METHOD": "predict_proba"})
    np.testing.assert_allclose(_numbers(client.invoke(_csv(REQUEST))), model.predict_proba(REQUEST))


def test_any_single_joblib_file_name(serve, tmp_path):
    model = LogisticRegression().fit(FEATURES, LABELS)
    joblib.dump(model, tmp_path / "classifier.joblib")
    (tmp_path / "notes.md").write_text("not a model")
    reply = serve(tmp_path).invoke(_csv(REQUEST))
    assert reply.text.splitlines() == [str(v) for v in model.predict(REQUEST)]


@pytest.mark.parametrize("suffix", ["json", "ubj"])
def test_xgboost_classifier_file_predicts_labels(serve, tmp_path, suffix):
    model = xgboost.XGBClassifier(n_estimators=5, max_depth=2).fit(FEATURES, LABELS)
    model.save_model(tmp_path / f"model.{suffix}")
    reply = serve(tmp_path).invoke(
        json.dumps({"instances": REQUEST.tolist()}).encode(), "application/json"
    )
    assert json.loads(reply.body) == model.predict(REQUEST).tolist()


def test_xgboost_booster_predicts_the_objective_output(serve, tmp_path):
    booster = xgboost.train(
        {"objective": "binary:logistic", "max_depth": 2},
        xgboost.DMatrix(FEATURES, label=LABELS),
        num_boost_round=5,
    )
    booster.save_model(tmp_path / "xgboost-model.json")
    expected = booster.predict(xgboost.DMatrix(REQUEST))
    np.testing.assert_allclose(_numbers(serve(tmp_path).invoke(_csv(REQUEST)))[:, 0], expected)


def test_lightgbm_text_model(serve, tmp_path):
    model = lightgbm.LGBMClassifier(n_estimators=5, verbose=-1).fit(FEATURES, LABELS)
    model.booster_.save_model(tmp_path / "model.txt")
    body = "".join(json.dumps(row) + "\n" for row in REQUEST.tolist()).encode()
    reply = serve(tmp_path).invoke(body, "application/jsonlines")
    assert reply.status == 200
    probabilities = [json.loads(line) for line in reply.text.splitlines()]
    np.testing.assert_allclose(probabilities, model.predict_proba(REQUEST)[:, 1])
