"""The check that a user module imports only what batchinfer's image (or its
code/requirements.txt) provides."""

import textwrap
from pathlib import Path

from batchinfer.serving.image_imports import (
    IMAGE_MODULES,
    image_modules,
    imported_modules,
    imports_note,
    unprovided_imports,
)
from tests.support.image_modules import image_modules_text


def write_model(model_dir: Path, source: str, requirements: str | None = None) -> Path:
    module = model_dir / "code" / "inference.py"
    module.parent.mkdir(parents=True)
    module.write_text(textwrap.dedent(source))
    if requirements is not None:
        (model_dir / "code" / "requirements.txt").write_text(requirements)
    return module


def test_top_level_nested_and_from_imports_count_relative_ones_do_not(tmp_path):
    module = write_model(
        tmp_path,
        """
        import os.path, json as js
        from sklearn.pipeline import Pipeline
        from . import sibling
        from .helpers import f


        def model_fn(model_dir):
            import torch.nn
            from xgboost import XGBClassifier
            return None
        """,
    )
    assert imported_modules(module) == {"os", "json", "sklearn", "torch", "xgboost"}


def test_a_module_that_cannot_be_parsed_imports_nothing_here(tmp_path):
    assert imported_modules(write_model(tmp_path, "def model_fn(:\n")) == frozenset()


def test_the_image_provides_its_pins_by_import_name_and_their_dependencies():
    provided = image_modules()
    assert {"sklearn", "xgboost", "lightgbm", "pandas", "numpy", "joblib"} <= provided
    assert {"scipy", "dateutil", "batchinfer"} <= provided  # dependencies, and batchinfer
    assert "torch" not in provided and "scikit_learn" not in provided


def test_image_modules_txt_is_generated_from_requirements_txt():
    assert IMAGE_MODULES.read_text() == image_modules_text(), (
        "batchinfer/serving/image_modules.txt is stale: run python -m tests.support.image_modules"
    )


def test_standard_library_image_and_local_modules_are_provided(tmp_path):
    module = write_model(
        tmp_path,
        """
        import csv, io
        import pandas as pd
        from sklearn.compose import ColumnTransformer
        import features
        from helpers.text import clean
        """,
    )
    (module.parent / "features.py").write_text("")
    (module.parent / "helpers").mkdir()
    assert unprovided_imports(module, tmp_path) == []


def test_imports_neither_in_the_image_nor_declared_are_named_sorted(tmp_path):
    module = write_model(tmp_path, "import torch\nimport yaml\nimport sklearn\n")
    assert unprovided_imports(module, tmp_path) == ["torch", "yaml"]


def test_code_requirements_txt_provides_by_distribution_name(tmp_path):
    # PyYAML is installed here (a test dependency): its import name is yaml. my-lib is not:
    # it counts as providing my_lib.
    module = write_model(
        tmp_path, "import yaml\nimport my_lib\nimport torch\n", "PyYAML>=5  # config\nmy-lib\n"
    )
    assert unprovided_imports(module, tmp_path) == ["torch"]


def test_the_note_names_what_to_add_and_where():
    assert imports_note("code/inference.py", []) is None
    assert imports_note("code/inference.py", ["torch"]) == (
        "code/inference.py imports torch, which batchinfer's image does not provide: add it to "
        "code/requirements.txt (the image installs it at model load)"
    )
    assert "imports cv2, torch, which" in (imports_note("inference.py", ["cv2", "torch"]) or "")
