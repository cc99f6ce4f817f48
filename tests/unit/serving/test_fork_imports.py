"""Which model library a model's workers share, imported once before they fork: the default
loader's library for a model with no user module and no requirements (C1: the user module
and code/requirements.txt are the model's own, loaded in each worker), and the modules of it
that a pickled model names for its classes."""

import pickle
import sys
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Any

import joblib
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from batchinfer.serving.fork_imports import pickled_modules, shared_libraries


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


def _gradient_boosting() -> Any:
    features, labels = make_classification(n_samples=60, n_features=4, random_state=0)
    return GradientBoostingClassifier(n_estimators=3, random_state=0).fit(features, labels)


def test_a_joblib_model_shares_the_modules_of_its_classes_read_before_its_first_array(tmp_path):
    joblib.dump(_gradient_boosting(), tmp_path / "model.joblib")
    assert shared_libraries(tmp_path, {}, 2) == ("sklearn", "sklearn.ensemble._gb")


def test_a_pickled_pipeline_names_every_step_s_module_and_no_other_package_s(tmp_path):
    pipeline = make_pipeline(StandardScaler(), _gradient_boosting())
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(pipeline, protocol=4))
    shared = shared_libraries(tmp_path, {}, 2)
    assert shared[:3] == ("sklearn", "sklearn.pipeline", "sklearn.preprocessing._data")
    assert "sklearn.ensemble._gb" in shared and "sklearn.tree._classes" in shared
    assert all(module.startswith("sklearn") for module in shared), "numpy is not the model's"
    assert set(shared[1:]) <= set(sys.modules), "each one a module its load imports"


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_pickles_of_every_protocol_from_2_name_their_classes_modules(tmp_path, protocol):
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(_gradient_boosting(), protocol=protocol))
    assert "sklearn.ensemble._gb" in pickled_modules(path, ["sklearn"])


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not a pickle",
        pickle.dumps(GradientBoostingClassifier(), protocol=0),  # text: GLOBAL, not read
        pickle.dumps(GradientBoostingClassifier(), protocol=4)[:40],  # cut short
    ],
)
def test_a_file_whose_pickle_cannot_be_read_names_what_was_read_or_nothing(tmp_path, body):
    path = tmp_path / "model.pkl"
    path.write_bytes(body)
    assert pickled_modules(path, ["sklearn"]) in [(), ("sklearn.ensemble._gb",)]


def test_a_compressed_joblib_file_names_no_module(tmp_path):
    joblib.dump(_gradient_boosting(), tmp_path / "model.joblib", compress=3)
    assert shared_libraries(tmp_path, {}, 2) == ("sklearn",)


def test_a_class_of_a_module_named_before_takes_its_module_from_the_memo_not_a_string(tmp_path):
    """Protocol 4 names a module once and fetches it from the memo after: the string pushed
    before (here a value of the model's) is no module."""
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps((OrderedDict, "sklearn.not_a_module", Counter), protocol=4))
    assert pickled_modules(path, ["sklearn", "collections"]) == ("collections",)


@pytest.mark.parametrize("name", ["sklearn.x,os", "sklearn.x\x00y", "sklearn.\udc80", "sklearn..x"])
def test_a_module_name_that_is_no_dotted_identifier_is_passed_over(tmp_path, name):
    """Such a name would split in a list of modules, or not fit in the environment."""
    path = tmp_path / "model.pkl"
    path.write_bytes(b"\x80\x04" + _short_string(name) + _short_string("C") + b"\x93.")
    assert pickled_modules(path, ["sklearn"]) == ()  # (PROTO 4, module, name, STACK_GLOBAL)


def _short_string(text: str) -> bytes:
    """A SHORT_BINUNICODE opcode pushing ``text`` (as pickle writes a lone surrogate)."""
    encoded = text.encode("utf-8", "surrogatepass")
    return b"\x8c" + bytes([len(encoded)]) + encoded
