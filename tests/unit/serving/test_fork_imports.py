"""Which model library a model's workers share, imported once before they fork: the default
loader's library for a model with no user module and no requirements (C1: the user module
and code/requirements.txt are the model's own, loaded in each worker)."""

from pathlib import Path

import pytest

from batchinfer.serving.fork_imports import shared_libraries


def _model(folder: Path, *files: str) -> Path:
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"")
    return folder


@pytest.mark.parametrize(
    ("files", "shared"),
    [
        (("model.joblib",), ("sklearn",)),
        (("pipeline.pkl",), ("sklearn",)),
        (("model.json",), ("xgboost",)),
        (("model.ubj",), ("xgboost",)),
        (("model.txt",), ("lightgbm",)),
        (("model.joblib", "other.pkl"), ("sklearn",)),
        (("only.txt",), ("lightgbm",)),  # a directory's only model file
        (("model.pt",), ()),  # PyTorch and ONNX Runtime: each worker, on its own GPU
        (("model.onnx",), ()),
        (("model.joblib", "model.json"), ("sklearn",)),  # model.<ext>: the loader's order
        (("model.joblib", "notes.txt"), ("sklearn",)),  # a stray *.txt is not the model
        (("a.joblib", "b.json"), ()),  # two files, neither model.<ext>: the load refuses
        ((), ()),
        (("model.joblib", "code/inference.py"), ()),  # the user module imports its own
        (("model.joblib", "inference.py"), ()),
        (("model.joblib", "code/requirements.txt"), ()),  # may install another version
    ],
)
def test_the_library_of_the_file_the_default_loader_picks_is_shared_by_a_model_alone(
    tmp_path, files, shared
):
    assert shared_libraries(_model(tmp_path, *files), {}, 2) == shared


def test_a_program_named_by_the_environment_is_a_user_module(tmp_path):
    model = _model(tmp_path, "model.joblib", "code/serve.py")
    assert shared_libraries(model, {}, 2) == ("sklearn",)
    assert shared_libraries(model, {"SAGEMAKER_PROGRAM": "serve.py"}, 2) == ()
    assert shared_libraries(model, {"SAGEMAKER_PROGRAM": "missing.py"}, 2) == ()  # said on load


def test_a_missing_directory_shares_nothing(tmp_path):
    assert shared_libraries(tmp_path / "gone", {}, 2) == ()


def test_one_worker_shares_nothing(tmp_path):
    assert shared_libraries(_model(tmp_path, "model.joblib"), {}, 1) == ()
