"""Where `batchinfer run` must do what the cloud does: inputs the Plan refuses, content types
no handler reads, file modes, and which answers have countable records (R4, R17, R19)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from batchinfer.engine.local_job import LocalJob, run_job
from batchinfer.examples import train_example_model, write_example_csv
from batchinfer.transform.settings import TransformSettings

CSV = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]

# Reads text/plain itself: each line is "a b", the prediction their sum, one line per record.
PLAIN_TEXT_MODULE = textwrap.dedent(
    """
    def model_fn(model_dir):
        return sum


    def input_fn(body, content_type):
        text = body.decode() if isinstance(body, bytes) else body
        return [[float(v) for v in line.split()] for line in text.splitlines()]


    def predict_fn(data, model):
        return [model(row) for row in data]


    def output_fn(prediction, accept):
        return "\\n".join(f"{p:g}" for p in prediction)
    """
)


def batchinfer(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "batchinfer", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def example_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model_dir = tmp_path_factory.mktemp("example") / "model"
    train_example_model(model_dir)
    return model_dir


def test_inputs_that_are_all_empty_are_refused_before_any_work_exit_3_r4(tmp_path, row_sum_model):
    """As the pipeline's Plan refuses a prefix whose objects are all empty."""
    data = tmp_path / "in"
    (data / "sub").mkdir(parents=True)
    (data / "a.csv").write_bytes(b"")
    (data / "sub" / "b.csv").write_bytes(b"")
    out = tmp_path / "out"
    result = batchinfer("run", data, "--model", row_sum_model, "--output", out, *CSV)
    assert result.returncode == 3, result.stderr
    said = " ".join(result.stderr.split())
    assert f"every input file under {data} is empty (a.csv, sub/b.csv)" in said
    assert not out.exists()


def test_a_directory_without_files_is_refused_exit_3_naming_it_r4(tmp_path, row_sum_model):
    (tmp_path / "in" / "only-folders").mkdir(parents=True)
    result = batchinfer("run", tmp_path / "in", "--model", row_sum_model, "--output", tmp_path)
    assert result.returncode == 3, result.stderr
    assert f"no input files under {tmp_path / 'in'}" in " ".join(result.stderr.split())


def test_a_content_type_no_handler_reads_is_refused_before_servers_start_c3(
    tmp_path, example_model
):
    data = tmp_path / "d.txt"
    data.write_bytes(b"1 2\n")
    result = batchinfer(
        "run", data, "--model", example_model, "--output", tmp_path / "out",
        "--content-type", "text/plain", "--split-type", "Line",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    said = " ".join(result.stderr.split())
    assert "content_type (ContentType): 'text/plain' is not a type the default handler" in said
    assert "no code/inference.py with an input_fn or transform_fn" in said
    assert "infer…" not in result.stderr  # refused before the model servers started
    assert not list((tmp_path / "out").glob("*.out"))


def test_a_user_module_without_input_fn_is_named_when_it_cannot_read_the_type(tmp_path):
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    module = PLAIN_TEXT_MODULE.replace("def input_fn(", "def _read(")
    (model / "code" / "inference.py").write_text(module)
    data = tmp_path / "d.txt"
    data.write_bytes(b"1 2\n")
    result = batchinfer(
        "run", data, "--model", model, "--output", tmp_path / "out",
        "--content-type", "text/plain", "--split-type", "Line",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "code/inference.py defines neither input_fn nor transform_fn" in result.stderr


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_a_user_module_with_input_fn_decides_an_unknown_content_type(tmp_path, engine):
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text(PLAIN_TEXT_MODULE)
    data = tmp_path / "in" / "d.txt"
    data.parent.mkdir()
    data.write_bytes(b"1 2\n3 4\n")
    settings = TransformSettings(
        content_type="text/plain", accept="text/plain", split_type="Line", assemble_with="Line"
    )
    result = run_job(LocalJob([data], tmp_path / "out", model, settings, engine=engine))
    assert result.succeeded, result.failures
    assert (tmp_path / "out" / "d.txt.out").read_bytes() == b"3\n7\n"


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_outputs_honour_the_umask(tmp_path, row_sum_model, umask, mode, engine):
    data = tmp_path / "in" / "d.csv"
    data.parent.mkdir()
    data.write_bytes(b"1,2\n3,4\n" * 50)
    settings = TransformSettings(
        content_type="text/csv", accept="text/csv", split_type="Line", assemble_with="Line"
    )
    out = tmp_path / "out"
    previous = os.umask(umask)
    try:
        result = run_job(
            LocalJob([data], out, row_sum_model, settings, engine=engine, shards=2, merge=True)
        )
    finally:
        os.umask(previous)
    assert result.succeeded
    for name in ("d.csv.out", "_manifest.json", "_SUCCESS"):
        assert (out / name).stat().st_mode & 0o777 == mode, name
    unsharded = tmp_path / "out2"
    previous = os.umask(umask)
    try:
        run_job(LocalJob([data], unsharded, row_sum_model, settings, engine=engine))
    finally:
        os.umask(previous)
    assert (unsharded / "d.csv.out").stat().st_mode & 0o777 == mode


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_a_json_array_per_mini_batch_is_not_counted_and_does_not_fail_r17(
    tmp_path, example_model, engine
):
    """Accept application/json: the default handler answers one JSON array per mini-batch;
    AssembleWith Line writes it with a newline. 300 records in, not 300 lines out: the file
    succeeds and the manifest says why its records were not counted."""
    data = tmp_path / "in" / "d.csv"
    data.parent.mkdir()
    write_example_csv(data, 300)
    settings = TransformSettings(
        content_type="text/csv",
        accept="application/json",
        split_type="Line",
        assemble_with="Line",
        batch_strategy="MultiRecord",
    )
    out = tmp_path / "out"
    result = run_job(LocalJob([data], out, example_model, settings, engine=engine))
    assert result.succeeded, result.failures
    lines = (out / "d.csv.out").read_bytes().splitlines()
    predictions = [p for line in lines for p in json.loads(line)]
    assert len(predictions) == 300 and set(predictions) <= {0, 1}
    manifest = json.loads((out / "_manifest.json").read_text())
    [entry] = manifest["files"]
    assert entry["records_in"] == 300 and entry["records_out"] is None
    assert "application/json" in entry["records_not_counted"]
    assert manifest["totals"]["records_out"] is None
