"""The example model and data generators the demo and benchmarks use."""

import json

import joblib
import numpy as np

from batchinfer.examples import train_example_model, write_example_csv, write_example_jsonl


def test_example_model_is_a_100_tree_classifier_on_10_features(tmp_path):
    path = train_example_model(tmp_path / "model")
    assert path == tmp_path / "model" / "model.joblib"
    model = joblib.load(path)
    assert model.n_estimators_ == 100 and model.n_features_in_ == 10
    assert set(model.classes_) == {0, 1}


def test_example_csv_and_jsonl_hold_the_same_realistic_rows(tmp_path, example_model):
    write_example_csv(tmp_path / "a.csv", 2000, seed=3)
    write_example_jsonl(tmp_path / "a.jsonl", 2000, seed=3)
    rows = np.loadtxt(tmp_path / "a.csv", delimiter=",")
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    assert rows.shape == (2000, 10)
    records = [json.loads(line) for line in lines]
    assert [record["id"] for record in records] == list(range(2000))
    np.testing.assert_array_equal([record["features"] for record in records], rows)
    assert set(np.unique(rows[:, 1])) <= {1.0, 2.0}  # sex stays a category
    assert 0.2 < example_model.predict(rows).mean() < 0.8  # both classes occur
    write_example_csv(tmp_path / "b.csv", 2000, seed=4)
    assert (tmp_path / "b.csv").read_bytes() != (tmp_path / "a.csv").read_bytes()


def test_large_example_files_draw_from_a_pool(tmp_path):
    write_example_csv(tmp_path / "big.csv", 250_001, seed=0)
    data = (tmp_path / "big.csv").read_bytes()
    assert data.count(b"\n") == 250_001 and data.endswith(b"\n")
    assert all(line.count(b",") == 9 for line in data.splitlines()[:1000])
