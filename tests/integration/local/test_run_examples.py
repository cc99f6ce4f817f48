"""`batchinfer example --framework`: each framework's model and handler script, end to end
through both engines (R13: one answer line per record; P4: both engines write the same)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

FORMATS = {
    "csv": ["--content-type", "text/csv", "--accept", "text/csv"],
    "jsonl": ["--content-type", "application/jsonlines", "--accept", "application/jsonlines"],
}
ROWS = 150


def batchinfer(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "batchinfer", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def _scores(output: bytes, fmt: str) -> list[float]:
    lines = output.decode().splitlines()
    return [json.loads(line)["score"] if fmt == "jsonl" else float(line) for line in lines]


@pytest.mark.parametrize(
    ("framework", "fmt", "model_file"),
    [
        ("sklearn", "csv", "model.joblib"),
        ("xgboost", "jsonl", "model.json"),
        ("lightgbm", "csv", "model.txt"),
    ],
)
def test_each_framework_example_runs_the_same_through_both_engines_p4(
    tmp_path, framework, fmt, model_file
):
    made = batchinfer(
        "example", tmp_path, "--framework", framework, "--format", fmt, "--rows", ROWS
    )
    assert made.returncode == 0, made.stderr
    model = tmp_path / "model"
    assert (model / model_file).is_file() and (model / "code" / "inference.py").is_file()
    outputs = {}
    for engine in ("transform", "processing"):
        out = tmp_path / f"out-{engine}"
        result = batchinfer(
            "run", tmp_path / "input", "--model", model, "--output", out, "--engine", engine,
            *FORMATS[fmt], "--split-type", "Line", "--assemble-with", "Line", "--json",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        manifest = json.loads(result.stdout)
        assert manifest["user_module"] == "code/inference.py"
        assert manifest["files"][0]["records_in"] == manifest["files"][0]["records_out"] == ROWS
        outputs[engine] = (out / f"data.{fmt}.out").read_bytes()
    assert outputs["transform"] == outputs["processing"]
    scores = _scores(outputs["transform"], fmt)
    assert len(scores) == ROWS and all(0.0 <= s <= 1.0 for s in scores)
    assert 0 < sum(s > 0.5 for s in scores) < ROWS  # both classes occur


def test_without_a_framework_the_example_is_a_plain_model_joblib(tmp_path):
    made = batchinfer("example", tmp_path, "--rows", 10)
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == ["model.joblib"]


def test_an_unknown_framework_is_refused_naming_the_option(tmp_path):
    made = batchinfer("example", tmp_path, "--framework", "torch", "--rows", 10)
    assert made.returncode == 2
    assert (
        "--framework must be sklearn, xgboost, lightgbm, pytorch, onnx, not 'torch'" in made.stderr
    )
