"""What ``import batchinfer`` gives: run, plan and Transformer in ``help(batchinfer)``, every
name of ``__all__``, and only the standard library loaded (the Lambdas import the package)."""

import dataclasses
import inspect
import json
import subprocess
import sys
import typing

import batchinfer
from batchinfer import api
from batchinfer.transform.settings import TransformSettings


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


def test_help_shows_run_plan_and_transformer():
    shown = _python("import batchinfer; help(batchinfer)")
    for name in ("run(inputs", "plan(inputs", "class Transformer", "class JobFailed"):
        assert name in shown, name
    assert "Transformer(model_name: str | os.PathLike[str] | None = None, instance_count" in shown


def test_importing_the_package_loads_only_the_standard_library():
    code = "import sys, json, batchinfer; print(json.dumps(list(sys.modules)))"
    loaded = json.loads(_python(code))
    ours = sorted(m for m in loaded if m.split(".")[0] == "batchinfer")
    others = {
        m.split(".")[0] for m in loaded if not m.startswith("_") and m.split(".")[0] != "batchinfer"
    }
    assert ours == ["batchinfer", "batchinfer.errors"]
    assert others <= set(sys.stdlib_module_names), others - set(sys.stdlib_module_names)


def test_every_exported_name_resolves():
    for name in batchinfer.__all__:
        assert getattr(batchinfer, name) is not None, name
    assert set(batchinfer.__all__) <= set(dir(batchinfer))


def test_the_settings_keywords_are_the_settings_fields():
    keywords = typing.get_type_hints(api.TransformKeywords)
    assert list(keywords) == [f.name for f in dataclasses.fields(TransformSettings)]
    for function in (api.run, api.plan, api.local_job):
        settings = inspect.signature(function).parameters["settings"]
        assert settings.kind is inspect.Parameter.VAR_KEYWORD, function
