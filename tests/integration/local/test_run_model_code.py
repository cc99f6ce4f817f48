"""`batchinfer run` with a model file for --model."""

from pathlib import Path

import joblib
import numpy as np
import pytest

from batchinfer.examples import train_example_model, train_framework_model, write_example_csv
from tests.support.cli import run_cli

CSV = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]


@pytest.fixture(scope="module")
def example_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("input") / "data.csv"
    write_example_csv(path, 200)
    return path


def test_a_model_joblib_file_is_a_model(tmp_path, capsys, example_data):
    model_file = train_example_model(tmp_path / "trained")
    out = tmp_path / "out"
    code, said = run_cli(
        capsys, "run", str(example_data), "--model", str(model_file), "--output", str(out), *CSV
    )
    assert code == 0, said
    rows = np.loadtxt(example_data, delimiter=",", ndmin=2)
    expected = [str(v) for v in joblib.load(model_file).predict(rows)]
    assert (out / "data.csv.out").read_text().splitlines() == expected
    assert model_file.is_file() and not list(out.glob(".batchinfer-*"))  # the link is gone


def test_an_xgboost_json_file_is_a_model(tmp_path, capsys, example_data):
    train_framework_model(tmp_path / "trained", "xgboost")
    model_file = tmp_path / "trained" / "model.json"  # alone: without its code/inference.py
    out = tmp_path / "out"
    code, said = run_cli(
        capsys, "run", str(example_data), "--model", str(model_file), "--output", str(out), *CSV
    )
    assert code == 0, said
    assert len((out / "data.csv.out").read_text().splitlines()) == 200


def test_a_file_neither_archive_nor_model_is_named_with_what_is_accepted(
    tmp_path, capsys, example_data
):
    notes = tmp_path / "model.bin"
    notes.write_bytes(b"not a model")
    code, said = run_cli(
        capsys, "run", str(example_data), "--model", str(notes), "--output", str(tmp_path / "o")
    )
    said = " ".join(said.split())
    assert code == 3, said
    assert f"model {notes}: neither a readable tar.gz archive" in said
    assert "*.joblib / *.pkl (scikit-learn), *.json / *.ubj (XGBoost), *.txt (LightGBM)" in said
    assert "Traceback" not in said
