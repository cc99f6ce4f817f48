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


def _servers_of(model_dir: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if proc.name.isdigit() and str(model_dir).encode() in cmdline and b"serve" in cmdline:
            pids.append(int(proc.name))
    return pids


def test_ctrl_c_stops_every_model_server_and_leaves_no_output(tmp_path, row_sum_model):
    slow = tmp_path / "in" / "slow.csv"
    slow.parent.mkdir()
    slow.write_bytes(b"slow,1\n" * 200)
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "batchinfer",
        "run",
        str(slow),
        "--model",
        str(row_sum_model),
        "--output",
        str(out),
        "--instance-count",
        "2",
        "--batch-strategy",
        "SingleRecord",
        *CSV,
    ]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not _servers_of(row_sum_model) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _servers_of(row_sum_model), "the run never started its servers"
    time.sleep(3)
    os.kill(proc.pid, signal.SIGINT)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    deadline = time.monotonic() + 30
    while _servers_of(row_sum_model) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _servers_of(row_sum_model) == []
    assert not (out / "slow.csv.out").exists() and not (out / "_SUCCESS").exists()
