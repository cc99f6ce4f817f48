"""A model's code/requirements.txt: installed at model load where
BATCHINFER_REQUIREMENTS_TARGET says (the image), only checked elsewhere (a laptop)."""

import os
import re
import sys
from pathlib import Path

import pytest

from batchinfer.serving import model_requirements
from batchinfer.serving.handlers import load_handler
from batchinfer.serving.launcher import start_server
from batchinfer.serving.model_requirements import TARGET_VAR, ensure_requirements
from batchinfer.serving.server_errors import ModelLoadError, ServerStartError
from tests.integration.serving.conftest import write_module
from tests.integration.serving.helpers import START_TIMEOUT, Client
from tests.support.wheels import write_wheel

# Answers each CSV line with tiny_dep.double of its first value: the package must be importable.
DOUBLING = """
import tiny_dep


def model_fn(model_dir):
    return tiny_dep


def transform_fn(model, body, content_type, accept):
    return "\\n".join(str(model.double(float(line.split(",")[0]))) for line in body.splitlines())
"""


@pytest.fixture
def isolated_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever an install puts on sys.path and PYTHONPATH is gone after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.delitem(sys.modules, "tiny_dep", raising=False)


def doubling_model(model_dir: Path, requirements: str, *, wheel: bool = True) -> Path:
    """A model whose code/inference.py imports tiny_dep, declared in code/requirements.txt and
    shipped as a wheel in code/lib/."""
    write_module(model_dir, DOUBLING)
    (model_dir / "code" / "requirements.txt").write_text(requirements)
    if wheel:
        write_wheel(
            model_dir / "code" / "lib", "tiny-dep", "1.0", "def double(x):\n    return 2 * x\n"
        )
    return model_dir


def test_requirements_this_environment_satisfies_load(tmp_path):
    write_module(tmp_path, "import numpy\n\ndef predict_fn(data, model):\n    return data\n")
    (tmp_path / "code" / "requirements.txt").write_text(
        "# what the module needs\nnumpy>=2\npackaging ; python_version >= '3'\n"
        "torch ; sys_platform == 'nonesuch'\n--index-url https://example.invalid/simple\n"
    )
    ensure_requirements(tmp_path, {})


def test_an_unmet_requirement_fails_the_load_in_one_line_naming_it_and_the_install(tmp_path):
    doubling_model(tmp_path, "tiny-dep==1.0\nnumpy<2\nnumpy\n")
    with pytest.raises(ModelLoadError) as failed:
        load_handler(tmp_path, env={})
    said = str(failed.value)
    requirements = tmp_path / "code" / "requirements.txt"
    assert "\n" not in said
    assert said.startswith(f"{requirements}: not satisfied in this Python environment: ")
    assert "tiny-dep==1.0 (not installed), numpy<2 (2." in said
    assert said.endswith(
        f"pip install --no-index --find-links {tmp_path / 'code' / 'lib'} -r {requirements}"
    )
    assert not (tmp_path / "code" / "lib" / "lib").exists()  # nothing was installed


def test_a_line_that_is_no_requirement_is_named_with_its_line_number(tmp_path):
    doubling_model(tmp_path, "numpy\ntiny dep 1.0\n", wheel=False)
    with pytest.raises(ModelLoadError, match=r"requirements.txt:2: 'tiny dep 1.0' is not a"):
        ensure_requirements(tmp_path, {})


def test_the_image_installs_from_code_lib_once_and_puts_it_on_the_path(
    tmp_path, isolated_path, monkeypatch
):
    model_dir = doubling_model(tmp_path / "model", "tiny-dep==1.0\nnumpy>=2  # the image's\n")
    target = tmp_path / "target"
    load_handler(model_dir, env={TARGET_VAR: str(target)})
    import tiny_dep

    assert Path(tiny_dep.__file__).is_relative_to(target)
    assert str(Path(tiny_dep.__file__).parent) in os.environ["PYTHONPATH"].split(os.pathsep)
    assert not list(target.rglob("numpy"))  # the image's own numpy satisfies it

    def pip_again(*_args: object) -> None:
        raise AssertionError("installed twice")

    monkeypatch.setattr(model_requirements, "_pip_install", pip_again)
    handler = load_handler(model_dir, env={TARGET_VAR: str(target)})
    assert handler.invoke(b"21\n", "text/csv", "text/csv") == (b"42.0", "text/csv")


def test_a_requirement_pip_cannot_install_is_named(tmp_path, isolated_path):
    model_dir = doubling_model(tmp_path / "model", "tiny-dep==2.0\n")
    with pytest.raises(ModelLoadError) as failed:
        ensure_requirements(model_dir, {TARGET_VAR: str(tmp_path / "target")})
    assert str(failed.value) == (
        f"{model_dir / 'code' / 'requirements.txt'}: pip could not install tiny-dep==2.0 from "
        f"{model_dir / 'code' / 'lib'} (no index): No matching distribution found for "
        "tiny-dep==2.0"
    )


def test_a_server_installs_once_before_its_two_workers_fork_and_serves_with_it(tmp_path):
    model_dir = doubling_model(tmp_path / "model", "tiny-dep==1.0\n")
    env = {TARGET_VAR: str(tmp_path / "target")}
    with start_server(model_dir, workers=2, env=env) as server:
        server.wait_healthy(START_TIMEOUT)
        for _ in range(4):  # both workers, most likely
            reply = Client(server.port).invoke(b"1.5\n4\n", accept="text/csv")
            assert (reply.status, reply.body) == (200, b"3.0\n8.0")
        log = server.log_text().splitlines()
        installed = [line for line in log if "Successfully installed tiny-dep-1.0" in line]
        assert len(installed) == 1 and f"[{server.process.pid}]" in installed[0]  # the master


def test_a_server_without_the_target_refuses_an_unmet_requirement(tmp_path):
    model_dir = doubling_model(tmp_path / "model", "tiny-dep==1.0\n")
    with (
        start_server(model_dir) as server,
        pytest.raises(ServerStartError, match=re.escape("tiny-dep==1.0 (not installed)")),
    ):
        server.wait_healthy(START_TIMEOUT)
