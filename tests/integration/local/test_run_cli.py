"""`batchinfer run` as a user runs it: exit codes, messages naming the fault, Ctrl-C."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CSV = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]


def batchinfer(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "batchinfer", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def data_csv(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "d.csv"
    path.parent.mkdir()
    path.write_bytes(b"1,2\n3,4\n")
    return path


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--split-type", "Lines"], "split_type"),
        (["--batch-strategy", "MultiRecrod"], "did you mean 'MultiRecord'?"),
        (["--max-payload-mb", "60", "--max-concurrent-transforms", "2"], "max_payload_mb"),
        (["--instance-count", "0"], "instance_count"),
        (["--input-filter", "$[0:2,5:]"], "input_filter"),
        (["--instance-type", "m5.large"], "instance_type"),
        (["--merge"], "--merge"),
        (["--shards", "many"], "--shards"),
        (["--env", "NOEQUALS"], "--env"),
    ],
)
def test_bad_settings_exit_2_naming_the_field_before_any_work_r1_r2_r16(
    tmp_path, data_csv, row_sum_model, options, named
):
    out = tmp_path / "out"
    result = batchinfer("run", data_csv, "--model", row_sum_model, "--output", out, *options)
    assert result.returncode == 2, result.stderr
    assert named in result.stderr
    assert not out.exists()


def test_missing_and_empty_inputs_exit_3_naming_the_path(tmp_path, row_sum_model):
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "nope.csv", tmp_path / "empty"):
        result = batchinfer("run", path, "--model", row_sum_model, "--output", tmp_path / "o")
        assert result.returncode == 3, result.stderr
        assert str(path) in result.stderr


def test_run_refuses_a_gz_input_before_any_work_exit_2(tmp_path, row_sum_model):
    data = tmp_path / "in" / "d.csv.gz"
    data.parent.mkdir()
    data.write_bytes(gzip.compress(b"1,2\n3,4\n"))
    out = tmp_path / "out"
    result = batchinfer("run", data, "--model", row_sum_model, "--output", out)
    assert result.returncode == 2, result.stderr
    assert str(data) in result.stderr and "--compression-type Gzip" in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


def test_json_summary_of_a_successful_run(tmp_path, data_csv, row_sum_model):
    out = tmp_path / "out"
    result = batchinfer("run", data_csv, "--model", row_sum_model, "--output", out, "--json", *CSV)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == "SUCCEEDED"
    assert summary["files"][0]["records_in"] == 2
    assert summary["user_module"] == "code/inference.py"
    assert (out / "d.csv.out").read_bytes() == b"3\n7"


def test_the_summary_says_the_handler_script_runs_in_framework_images(
    tmp_path, data_csv, row_sum_model
):
    out = tmp_path / "out"
    result = batchinfer("run", data_csv, "--model", row_sum_model, "--output", out, *CSV)
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert "model: code/inference.py follows SageMaker's handler protocol" in said
    assert "AWS's scikit-learn, XGBoost and PyTorch inference images" in said


def test_failed_run_exits_1_and_names_file_record_and_reason_r19(tmp_path, row_sum_model):
    bad = tmp_path / "in" / "bad.csv"
    bad.parent.mkdir()
    bad.write_bytes(b"1,2\nbad\n")
    result = batchinfer(
        "run",
        bad,
        "--model",
        row_sum_model,
        "--output",
        tmp_path / "o",
        "--quiet",
        *CSV,
        "--batch-strategy",
        "SingleRecord",
    )
    assert result.returncode == 1
    assert "bad.csv" in result.stderr and "record 2" in result.stderr and "400" in result.stderr
    assert not (tmp_path / "o" / "bad.csv.out").exists()


def _instances_of(model_dir: Path, engine: str) -> list[int]:
    """Process ids of the model servers (or processing instances) serving ``model_dir``."""
    word = b"serve" if engine == "transform" else b"process"  # the sub-command or its module
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        mentions_model = any(str(model_dir).encode() in arg for arg in cmdline)
        names_command = any(arg == word or arg.endswith(b"." + word) for arg in cmdline)
        if proc.name.isdigit() and mentions_model and names_command:
            pids.append(int(proc.name))
    return pids


def _slow_run(tmp_path: Path, model: Path, engine: str) -> tuple[list[str], Path]:
    """A run that takes long enough to be stopped: its command and its output folder."""
    slow = tmp_path / "in" / "slow.csv"
    slow.parent.mkdir()
    slow.write_bytes(b"slow,1\n" * 200)
    (tmp_path / "in" / "fast.csv").write_bytes(b"1,2\n" * 10)
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "batchinfer",
        "run",
        str(tmp_path / "in"),
        "--model",
        str(model),
        "--output",
        str(out),
        "--instance-count",
        "2",
        "--batch-strategy",
        "SingleRecord",
        "--engine",
        engine,
        *CSV,
    ]
    return command, out


def _started(command: list[str], model: Path, engine: str) -> subprocess.Popen[str]:
    """``command`` once its two instances run, and a little longer."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(_instances_of(model, engine)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _instances_of(model, engine), "the run never started its instances"
    time.sleep(3)
    return proc


def _no_instances_left(model: Path, engine: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while _instances_of(model, engine) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _instances_of(model, engine) == []


@pytest.mark.parametrize(
    ("engine", "stop", "code"),
    [
        ("transform", signal.SIGINT, 130),
        ("processing", signal.SIGINT, 130),
        ("transform", signal.SIGTERM, 143),
        ("transform", signal.SIGHUP, 129),
    ],
)
def test_ctrl_c_sigterm_and_sighup_stop_every_instance_and_leave_nothing_complete_c10_r19(
    tmp_path, row_sum_model, engine, stop, code
):
    """Ctrl-C, and SIGTERM or SIGHUP as `timeout`, `kill` or a closed terminal send them:
    "interrupted", exit 128 + the signal, every instance stopped, no _SUCCESS, no temporary or
    partial output; the manifest says INTERRUPTED and lists only the outputs that are whole."""
    command, out = _slow_run(tmp_path, row_sum_model, engine)
    proc = _started(command, row_sum_model, engine)
    os.kill(proc.pid, stop)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert "2 of 2 done" not in stderr  # the live display does not show the run finished
    _no_instances_left(row_sum_model, engine)
    assert not (out / "_SUCCESS").exists() and not (out / "slow.csv.out").exists()
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["status"] == "INTERRUPTED"
    listed = {name for entry in manifest["files"] for name in entry["outputs"]}
    for entry in manifest["files"]:
        assert (entry["status"] == "SUCCEEDED") == bool(entry["outputs"])
    assert {"slow.csv"} <= {e["name"] for e in manifest["files"] if e["status"] == "INTERRUPTED"}
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert on_disk == listed | {"_manifest.json"}  # nothing temporary, nothing unlisted


def test_an_engine_killed_with_sigkill_leaves_no_server_and_its_folder_goes_next_run(
    tmp_path, row_sum_model
):
    """SIGKILL gives the engine no chance: its model servers see it gone and stop (C10: a clean
    stop on SIGTERM), nothing listens any more, and the next run into the same output removes
    the working folder the killed one left."""
    command, out = _slow_run(tmp_path, row_sum_model, "transform")
    proc = _started(command, row_sum_model, "transform")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    _no_instances_left(row_sum_model, "transform", within=40.0)
    left = [p.name for p in out.glob(".batchinfer-*")]
    assert left, "the killed run's working folder is still there"
    rerun = subprocess.run(
        [*command[:4], str(tmp_path / "in" / "fast.csv"), *command[5:], "--overwrite"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert not list(out.glob(".batchinfer-*")), "a dead run's working folder is removed"
