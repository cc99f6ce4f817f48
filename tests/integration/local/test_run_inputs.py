"""`batchinfer run` on real data folders: which files are inputs (R4: a key prefix or a
ManifestFile selects the input objects) and what an empty line is (R6: what a record is
under each SplitType), through each local engine."""

import json
from collections.abc import Iterator
from pathlib import Path

import joblib
import pytest
from sklearn.linear_model import LinearRegression

from batchinfer.serving.launcher import start_server
from tests.support.cli import run_cli

START_TIMEOUT = 120.0
CSV = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]
LINES = [*CSV, "--assemble-with", "Line"]
# What a Spark or Hadoop job leaves in its output folder besides the data.
SPARK_FOLDER = {
    "part-00000.csv": b"1,2\n",
    "day1/a.csv": b"3,4\n",
    "_SUCCESS": b"",
    "_committed_4711": b"{}",
    ".part-00000.csv.crc": b"crc\x00\x01",
    "_temporary/0/part-00001.csv": b"5,6\n",
}


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def outputs(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*.out"))


def test_a_data_folder_is_scored_without_its_hidden_and_underscore_files_r4(
    capsys, tmp_path, row_sum_model
):
    data = write_tree(tmp_path / "in", SPARK_FOLDER)
    out = tmp_path / "out"
    code, printed = run_cli(
        capsys, "run", str(data), "--model", str(row_sum_model), "--output", str(out), *LINES
    )
    assert code == 0, printed
    assert outputs(out) == ["day1/a.csv.out", "part-00000.csv.out"]
    manifest = json.loads((out / "_manifest.json").read_text())
    assert [f["name"] for f in manifest["files"]] == ["day1/a.csv", "part-00000.csv"]


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_a_file_named_on_the_command_line_is_scored_whatever_its_name_r4(
    capsys, tmp_path, row_sum_model, engine
):
    data = write_tree(tmp_path / "in", {"_x.csv": b"1,2\n3,4\n"})
    out = tmp_path / "out"
    code, printed = run_cli(
        capsys, "run", str(data / "_x.csv"), "--model", str(row_sum_model), "--output",
        str(out), *LINES, "--engine", engine,
    )  # fmt: skip
    assert code == 0, printed
    assert (out / "_x.csv.out").read_bytes() == b"3\n7\n"


def test_include_narrows_and_exclude_removes_inputs_by_their_relative_name_r4(
    capsys, tmp_path, row_sum_model
):
    data = write_tree(
        tmp_path / "in",
        {"a.csv": b"1\n", "a.json": b"[1]\n", "day1/b.csv": b"2\n", "day2/c.csv": b"3\n"},
    )
    out = tmp_path / "out"
    run = ["run", str(data), "--model", str(row_sum_model), "--output", str(out), *LINES]
    code, printed = run_cli(capsys, *run, "--include", "*.csv", "--exclude", "day2/*")
    assert code == 0, printed
    assert outputs(out) == ["a.csv.out", "day1/b.csv.out"]
    code, printed = run_cli(capsys, *run, "--include", "*.txt", "--exclude", "a*")
    assert code == 3, printed
    assert (
        f"no input files under {data}: 4 files (a.csv, a.json, day1/b.csv, ...) not selected by "
        "include '*.txt', exclude 'a*'"
    ) in " ".join(printed.split())


# --- empty lines, through the default handler (the server refuses an empty CSV record) -----


@pytest.fixture(scope="module")
def linear_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model the default handler serves: the sum of two features."""
    model_dir = tmp_path_factory.mktemp("linear-model")
    joblib.dump(LinearRegression().fit([[1, 0], [0, 1], [1, 1]], [1, 1, 2]), model_dir / "m.joblib")
    return model_dir


@pytest.fixture(scope="module")
def linear_url(linear_model: Path) -> Iterator[str]:
    with start_server(linear_model, workers=1) as server:
        server.wait_healthy(START_TIMEOUT)
        yield server.url


def engine_options(engine: str, model: Path, url: str) -> list[str]:
    if engine == "endpoint":
        return ["--engine", "endpoint", "--endpoint-url", url]
    return ["--engine", engine, "--model", str(model)]


@pytest.mark.parametrize("engine", ["transform", "processing", "endpoint"])
def test_an_empty_line_fails_its_file_naming_the_record_unless_skipped_r6(
    capsys, tmp_path, linear_model, linear_url, engine
):
    """By default an empty line is a record, which the default handler refuses; the file
    fails naming that record and --skip-blank-lines. Skipped, the file is scored as the
    same file without empty lines is, and they are not counted as records."""
    blank = b"1,2\n3,4\n\r\n5,6\n\n"
    data = write_tree(tmp_path / "in", {"a.csv": blank})
    clean = write_tree(tmp_path / "clean", {"a.csv": b"1,2\n3,4\n5,6\n"})
    options = [*LINES, *engine_options(engine, linear_model, linear_url)]
    code, printed = run_cli(capsys, "run", str(data), "--output", str(tmp_path / "o1"), *options)
    assert code == 1, printed
    said = " ".join(printed.split())
    assert "FAILED a.csv: record 3: is an empty line" in said
    assert "skip them with --skip-blank-lines" in said
    assert "text/csv record 3 is empty" in said
    assert outputs(tmp_path / "o1") == []

    skipped, plain = tmp_path / "skipped", tmp_path / "plain"
    run = ["run", str(data), "--output", str(skipped), *options, "--skip-blank-lines"]
    code, printed = run_cli(capsys, *run)
    assert code == 0, printed
    code, printed = run_cli(capsys, "run", str(clean), "--output", str(plain), *options)
    assert code == 0, printed
    assert (skipped / "a.csv.out").read_bytes() == (plain / "a.csv.out").read_bytes()
    [file] = json.loads((skipped / "_manifest.json").read_text())["files"]
    assert (file["records_in"], file["records_out"], file["bytes_in"]) == (3, 3, len(blank))
