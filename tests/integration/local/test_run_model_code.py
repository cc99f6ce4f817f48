"""`batchinfer run` with a model file for --model, and with a user module whose imports or
code/requirements.txt the image would not satisfy as they stand."""

import textwrap
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


@pytest.mark.parametrize("engine", ["transform", "processing"])
@pytest.mark.parametrize("framework", ["pytorch", "onnx"])
def test_a_network_file_is_a_model_scored_as_in_process(
    tmp_path, capsys, example_data, framework, engine
):
    """The example network (`batchinfer example --framework pytorch|onnx`) with no
    inference.py, in forward passes of 64 records: the outputs are the float32 values the
    runtime gives in process (written in shortest round-trip form, so compared exactly)."""
    model_file = train_framework_model(tmp_path / "trained", framework)
    out = tmp_path / "out"
    code, said = run_cli(
        capsys,
        "run",
        str(example_data),
        "--model",
        str(model_file),
        "--output",
        str(out),
        "--engine",
        engine,
        "--max-batch-records",
        "64",
        *CSV,
    )
    assert code == 0, said
    rows = np.loadtxt(example_data, delimiter=",", ndmin=2).astype(np.float32)
    if framework == "pytorch":
        import torch

        with torch.inference_mode():
            expected = torch.jit.load(str(model_file))(torch.from_numpy(rows)).numpy()
    else:
        import onnxruntime

        session = onnxruntime.InferenceSession(str(model_file))
        (expected,) = session.run(None, {"features": rows})
    written = np.array((out / "data.csv.out").read_text().split(), dtype=np.float32)
    np.testing.assert_array_equal(written, expected)


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
    assert (
        "*.joblib / *.pkl (scikit-learn), *.json / *.ubj (XGBoost), *.txt (LightGBM), "
        "*.pt / *.pth (TorchScript), *.onnx (ONNX)" in said
    )
    assert "Traceback" not in said


def module_model(model_dir: Path, source: str, requirements: str | None = None) -> Path:
    """The row-sum user module, plus ``source`` at its top."""
    from tests.support.models import write_row_sum_model

    write_row_sum_model(model_dir)
    module = model_dir / "code" / "inference.py"
    module.write_text(textwrap.dedent(source) + module.read_text())
    if requirements is not None:
        (model_dir / "code" / "requirements.txt").write_text(requirements)
    return model_dir


def test_the_summary_names_an_import_the_image_does_not_provide(tmp_path, capsys):
    model = module_model(tmp_path / "model", "import yaml  # installed here, not in the image\n")
    data = tmp_path / "d.csv"
    data.write_text("1,2\n")
    code, said = run_cli(
        capsys, "run", str(data), "--model", str(model), "--output", str(tmp_path / "o"), *CSV
    )
    said = " ".join(said.split())
    assert code == 0, said
    assert (
        "model: code/inference.py imports yaml, which batchinfer's image does not provide: "
        "add it to code/requirements.txt (the image installs it at model load)"
    ) in said
    assert "runs unchanged" not in said


def test_an_import_code_requirements_txt_declares_runs_unchanged(tmp_path, capsys):
    model = module_model(tmp_path / "model", "import yaml\n", "PyYAML\n")
    data = tmp_path / "d.csv"
    data.write_text("1,2\n")
    code, said = run_cli(
        capsys, "run", str(data), "--model", str(model), "--output", str(tmp_path / "o"), *CSV
    )
    said = " ".join(said.split())
    assert code == 0, said
    assert "model: code/inference.py follows SageMaker's handler protocol" in said
    assert "runs unchanged in batchinfer's image" in said


def test_an_unmet_requirement_stops_the_run_before_any_server_in_one_line(tmp_path, capsys):
    model = module_model(tmp_path / "model", "", "no-such-dist-here>=1\n")
    data = tmp_path / "d.csv"
    data.write_text("1,2\n")
    code, said = run_cli(
        capsys, "run", str(data), "--model", str(model), "--output", str(tmp_path / "o"), *CSV
    )
    requirements = model / "code" / "requirements.txt"
    assert code == 1, said
    assert said.splitlines()[-1] == (
        f"error: {requirements}: not satisfied in this Python environment: "
        "no-such-dist-here>=1 (not installed) (batchinfer installs a model's requirements only "
        f"in its image); install them with: pip install -r {requirements}"
    )
