"""A run never loses what an earlier run wrote: an output folder that holds files is refused
unless ``--overwrite`` or ``--resume``; ``--resume`` continues a run stopped any way (Ctrl-C,
SIGKILL, a failed input) and ends as a run that never stopped would (R12: one output per
input, named after it; R19: none for an input that failed)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.models import write_model, write_row_sum_model

CSV = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]


def _files(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` by relative name, with its bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "_manifest.json").read_text())


def _run(capsys, inputs: Path, model: Path, out: Path, *options: str) -> tuple[int, str]:
    return run_cli(
        capsys, "run", str(inputs), "--model", str(model), "--output", str(out), *CSV, *options
    )


@pytest.fixture
def days(tmp_path: Path) -> tuple[Path, Path]:
    day1, day2 = tmp_path / "day1.csv", tmp_path / "day2.csv"
    day1.write_bytes(b"1,2\n3,4\n")
    day2.write_bytes(b"5,6\n")
    return day1, day2


def test_a_second_run_into_a_folder_that_holds_outputs_is_refused_and_changes_nothing(
    capsys, tmp_path, row_sum_model, days
):
    out = tmp_path / "o"
    assert _run(capsys, days[0], row_sum_model, out)[0] == 0
    before = _files(out)
    code, said = _run(capsys, days[1], row_sum_model, out)
    assert code == 2
    assert "already holds 3 files" in said and "day1.csv.out" in said
    assert "--overwrite" in said and "--resume" in said
    assert _files(out) == before


def test_overwrite_replaces_only_what_the_new_run_writes(capsys, tmp_path, row_sum_model, days):
    out = tmp_path / "o"
    assert _run(capsys, days[0], row_sum_model, out)[0] == 0
    day1_output = (out / "day1.csv.out").read_bytes()
    assert _run(capsys, days[1], row_sum_model, out, "--overwrite")[0] == 0
    assert (out / "day1.csv.out").read_bytes() == day1_output  # not this run's: left alone
    assert (out / "day2.csv.out").read_bytes() == b"11"
    assert [f["name"] for f in _manifest(out)["files"]] == ["day2.csv"]
    assert (out / "_SUCCESS").exists()


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_a_model_that_fails_to_load_leaves_the_earlier_run_as_it_was(
    capsys, tmp_path, row_sum_model, days, engine
):
    """--overwrite replaces outputs only once the model serves: a broken model changes
    nothing, not even the earlier run's _SUCCESS."""
    out = tmp_path / "o"
    assert _run(capsys, days[0], row_sum_model, out)[0] == 0
    before = _files(out)
    broken = write_model(
        tmp_path / "broken", "def model_fn(model_dir):\n    raise RuntimeError('no weights')\n"
    )
    code, said = _run(capsys, days[0], broken, out, "--overwrite", "--engine", engine)
    assert code != 0
    assert "no weights" in said
    assert _files(out) == before


def test_an_output_folder_inside_the_input_is_not_an_input(capsys, tmp_path, row_sum_model):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_bytes(b"1,2\n")
    out = data / "scored"
    assert _run(capsys, data, row_sum_model, out)[0] == 0
    code, said = _run(capsys, data, row_sum_model, out, "--overwrite")
    assert code == 0, said
    assert [f["name"] for f in _manifest(out)["files"]] == ["a.csv"]
    assert set(_files(out)) == {"a.csv.out", "_manifest.json", "_SUCCESS"}


def test_overwrite_and_resume_exclude_each_other(capsys, tmp_path, row_sum_model, days):
    code, said = _run(capsys, days[0], row_sum_model, tmp_path / "o", "--overwrite", "--resume")
    assert code == 2 and "exclude each other" in said


def test_resume_into_an_empty_folder_is_a_first_run(capsys, tmp_path, row_sum_model, days):
    out = tmp_path / "o"
    assert _run(capsys, days[0], row_sum_model, out, "--resume")[0] == 0
    assert _manifest(out)["status"] == "SUCCEEDED"


def test_resume_refuses_other_settings_or_another_model(capsys, tmp_path, row_sum_model, days):
    out = tmp_path / "o"
    assert _run(capsys, days[0], row_sum_model, out)[0] == 0
    code, said = _run(capsys, days[0], row_sum_model, out, "--resume", "--max-payload-mb", "1")
    assert code == 2 and "the settings differ" in said
    other = write_row_sum_model(tmp_path / "other-model")
    (other / "code" / "inference.py").write_text(
        (other / "code" / "inference.py").read_text() + "\n# retrained\n"
    )
    code, said = _run(capsys, days[0], other, out, "--resume")
    assert code == 2 and "the model differ" in said
    code, said = _run(capsys, tmp_path / "none", row_sum_model, tmp_path / "empty", "--resume")
    assert code == 3  # nothing to resume from and no input: the input is named


def test_resume_reruns_a_failed_input_and_one_that_changed_and_keeps_the_rest(
    capsys, tmp_path, row_sum_model
):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_bytes(b"1,2\n")
    (data / "b.csv").write_bytes(b"3,bad\n")
    (data / "c.csv").write_bytes(b"5,6\n")
    out = tmp_path / "o"
    code, said = _run(capsys, data, row_sum_model, out)
    assert code == 1 and "b.csv" in said
    assert not (out / "b.csv.out").exists()  # R19
    kept = (out / "a.csv.out").stat().st_mtime_ns
    (data / "b.csv").write_bytes(b"3,4\n")  # fixed
    (data / "c.csv").write_bytes(b"5,6\n7,8\n")  # new rows since
    code, said = _run(capsys, data, row_sum_model, out, "--resume")
    assert code == 0, said
    assert "resumed: 1 input kept" in said
    assert (out / "a.csv.out").stat().st_mtime_ns == kept
    assert _files(out)["b.csv.out"] == b"7" and _files(out)["c.csv.out"] == b"11\n15"
    manifest = _manifest(out)
    assert manifest["status"] == "SUCCEEDED" and manifest["kept_inputs"] == 1
    assert [f["records_in"] for f in manifest["files"]] == [1, 1, 2]
    assert (out / "_SUCCESS").exists()


def _interruptible(tmp_path: Path, model: Path, flag: Path, out: Path) -> list[str]:
    """A run of three inputs, one instance taking them in name order: a.csv and b.csv are
    quick, slow.csv takes a second a record while ``flag`` exists."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a.csv").write_bytes(b"1,2\n3,4\n")
    (data / "b.csv").write_bytes(b"5,6\n")
    (data / "slow.csv").write_bytes(b"slow,1\n" * 20)
    return [
        sys.executable,
        "-m",
        "batchinfer",
        "run",
        str(data),
        "--model",
        str(model),
        "--output",
        str(out),
        "--batch-strategy",
        "SingleRecord",
        "--env",
        f"SLOW_WHILE={flag}",
        *CSV,
    ]


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM])
def test_resume_after_a_run_was_killed_ends_as_a_run_that_never_stopped(
    tmp_path, row_sum_model, stop
):
    """The manifest follows the outputs put in place, so even SIGKILL leaves what --resume
    needs; the inputs done are kept (not scored again), the rest run, and the final
    manifest and outputs are those of a run that never stopped."""
    flag, out = tmp_path / "slow-while", tmp_path / "o"
    flag.touch()
    command = _interruptible(tmp_path, row_sum_model, flag, out)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out / "_manifest.json").exists():
        time.sleep(0.1)
    assert (out / "_manifest.json").exists(), "the run never finished an input"
    os.kill(proc.pid, stop)
    proc.communicate(timeout=60)
    done = {f["name"] for f in _manifest(out)["files"] if f["status"] == "SUCCEEDED"}
    assert "a.csv" in done and "slow.csv" not in done
    mtime = (out / "a.csv.out").stat().st_mtime_ns
    refused = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--resume" in refused.stderr

    flag.unlink()  # slow.csv is quick from now on
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "a.csv.out").stat().st_mtime_ns == mtime
    whole = tmp_path / "whole"
    never_stopped = subprocess.run(
        [
            *command[: command.index("--output") + 1],
            str(whole),
            *command[command.index(str(out)) + 1 :],
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert never_stopped.returncode == 0, never_stopped.stderr
    assert {k: v for k, v in _files(out).items() if not k.startswith("_")} == {
        k: v for k, v in _files(whole).items() if not k.startswith("_")
    }
    assert set(_files(out)) == set(_files(whole))  # _SUCCESS, nothing temporary
    counted = ["name", "status", "outputs", "records_in", "records_out", "bytes_in", "bytes_out"]
    resumed_manifest, whole_manifest = _manifest(out), _manifest(whole)
    assert [{k: f[k] for k in counted} for f in resumed_manifest["files"]] == [
        {k: f[k] for k in counted} for f in whole_manifest["files"]
    ]
    assert resumed_manifest["status"] == "SUCCEEDED"
    assert resumed_manifest["kept_inputs"] == len(done)
    for key in ("files", "failed", "records_in", "records_out", "bytes_in", "bytes_out"):
        assert resumed_manifest["totals"][key] == whole_manifest["totals"][key]
