"""What ``pip install batchinfer`` brings: pyproject.toml's dependencies run a local job with
the bundled example (``batchinfer example`` then ``batchinfer run``, as ``make demo`` does),
with every module only an extra or the image's pins bring made unimportable, and a model of
an extra not installed names the install that brings it; the image's requirements.txt pins
every dependency and extra it serves with; the README names each extra."""

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from batchinfer.examples import train_framework_model
from batchinfer.serving.image_imports import distribution_modules
from batchinfer.serving.model_requirements import read_requirements

ROOT = Path(__file__).resolve().parents[3]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
CORE = [Requirement(text) for text in PROJECT["dependencies"]]
EXTRAS = {
    extra: [Requirement(text) for text in texts]
    for extra, texts in PROJECT["optional-dependencies"].items()
}
PINS = read_requirements(ROOT / "requirements.txt")

# Run in every Python process of the job (the CLI and its model servers) through PYTHONPATH:
# importing a module of BLOCKED_MODULES fails as it does where it is not installed.
SITECUSTOMIZE = """\
import os
import sys

BLOCKED = set(os.environ["BLOCKED_MODULES"].split(","))


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""


def _names(requirements: list[Requirement]) -> set[str]:
    return {canonicalize_name(r.name) for r in requirements}


def _not_core_modules() -> set[str]:
    """The top-level modules of the image's pins and of every extra (with what they depend
    on) that the core dependencies do not bring."""
    others = [*PINS, *(r for rs in EXTRAS.values() for r in rs if r.name != PROJECT["name"])]
    return set(distribution_modules(others)) - set(distribution_modules(CORE))


def test_the_image_pins_every_dependency_and_the_serve_extras_and_nothing_else():
    assert EXTRAS["serve"] == [Requirement("batchinfer[xgboost,lightgbm]")]
    assert _names(PINS) == _names(CORE) | _names(EXTRAS["xgboost"]) | _names(EXTRAS["lightgbm"])
    assert _names(EXTRAS["plot"]) == {"matplotlib"}


def test_the_readme_says_what_each_extra_enables():
    readme = (ROOT / "README.md").read_text()
    assert [extra for extra in EXTRAS if f"\n| `{extra}` | " not in readme] == []


def test_the_core_dependencies_run_the_example_job_without_any_extra(tmp_path):
    blocked = _not_core_modules()
    assert {"xgboost", "lightgbm", "matplotlib", "torch", "onnxruntime"} <= blocked
    assert not {"numpy", "sklearn", "gunicorn", "pyarrow"} & blocked
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    path = os.pathsep.join([str(tmp_path / "site"), str(ROOT)])
    env = os.environ | {"PYTHONPATH": path, "BLOCKED_MODULES": ",".join(sorted(blocked))}

    def batchinfer(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "batchinfer", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    check = "import xgboost"
    refused = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True)
    assert b"No module named 'xgboost'" in refused.stderr
    batchinfer("example", "ex", "--rows", "2000")
    batchinfer(
        *("run", "ex/input", "--model", "ex/model", "--output", "ex/output"),
        *("--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"),
        *("--assemble-with", "Line"),
        *("--join-source", "Input", "--instance-count", "2", "--shards", "2", "--merge"),
    )
    rows = (tmp_path / "ex" / "output" / "data.csv.out").read_text().splitlines()
    assert len(rows) == 2000 and (tmp_path / "ex" / "output" / "_SUCCESS").exists()

    # An XGBoost model without its extra: one line naming the install that brings it.
    refused = subprocess.run(
        [sys.executable, "-m", "batchinfer", "example", "xgb", "--framework", "xgboost"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "--framework xgboost: No module named 'xgboost': pip install 'batchinfer[xgboost]'" in (
        refused.stderr
    )
    refused = subprocess.run(
        [sys.executable, "-m", "batchinfer", "example", "pt", "--framework", "pytorch"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "No module named 'torch': pip install 'batchinfer[torch]'" in refused.stderr
    model = tmp_path / "xgb-model"
    train_framework_model(model, "xgboost")  # here, where xgboost is installed
    shutil.rmtree(model / "code")  # the model file alone: the default handler loads it
    refused = subprocess.run(
        [sys.executable, "-m", "batchinfer", "run", "ex/input", "--model", str(model),
         "--output", "xgb-out", "--content-type", "text/csv", "--split-type", "Line"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "No module named 'xgboost': pip install 'batchinfer[xgboost]'" in refused.stderr
