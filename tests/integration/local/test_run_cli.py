"""`batchinfer run` as a user runs it: exit codes, messages naming the fault, Ctrl-C."""

import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from batchinfer.serving.server import GRACEFUL_TIMEOUT
from tests.support.stopping import output_once_stopped

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


def _slow_run(
    tmp_path: Path, model: Path, engine: str, *, stall: bool = False
) -> tuple[list[str], Path]:
    """A run that takes long enough to be stopped (``stall``: its first request never ends in
    time): its command and its output folder."""
    slow = tmp_path / "in" / "slow.csv"
    slow.parent.mkdir()
    slow.write_bytes(b"stall,1\n" * stall + b"slow,1\n" * 200)
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


def _started(
    command: list[str], model: Path, engine: str, env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """``command`` (in ``env``) once its two instances run, and a little longer."""
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
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
    stderr = output_once_stopped(proc)
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


# Every process a run starts inherits its environment, and this variable in it.
RUN_MARK = "BATCHINFER_TEST_RUN"


def _processes_of(mark: str, groups: set[int]) -> dict[int, int]:
    """The running processes (pid: process group) with ``mark`` in their environment or in one
    of ``groups``; a zombie (dead, not reaped by its new parent) does not run."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            state, _parent, group = (proc / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        marked = f"{RUN_MARK}={mark}".encode() in environ
        if proc.name.isdigit() and state != "Z" and (marked or int(group) in groups):
            found[int(proc.name)] = int(group)
    return found


def _listening_ports(pids: Iterable[int]) -> set[int]:
    """The TCP ports that the processes ``pids`` listen on."""
    sockets = set()
    for pid in pids:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        sockets |= {link[len("socket:[") : -1] for link in links if link.startswith("socket:[")}
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in sockets:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_an_engine_killed_with_sigkill_leaves_nothing_running_or_listening_and_its_folder_goes(
    tmp_path, row_sum_model, engine
):
    """SIGKILL gives the engine no chance, yet every process it started and every process those
    started (gunicorn's masters and workers; a processing instance, its forkserver and pool
    workers) stops once it is gone, one in the middle of a ten-minute request too, without
    the 25 s a request in flight gets from a stop the engine makes (C10): its answer has no
    reader; no model server's port accepts a connection any more; and the next run into the
    same output removes the working folder the killed one left."""
    command, out = _slow_run(tmp_path, row_sum_model, engine, stall=True)
    mark = f"{os.getpid()}-{tmp_path.name}"
    stalled = tmp_path / "stalled"
    env = {**os.environ, RUN_MARK: mark, "ROW_SUM_STALLED": str(stalled)}
    proc = _started(command, row_sum_model, engine, env=env)
    groups: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while not stalled.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert stalled.exists(), "the stalling request never started"
        started = _processes_of(mark, groups)
        groups = set(started.values()) - {os.getpgrp()}  # the instances' own groups
        ports = _listening_ports(started)
        assert len(started) > 2 and len(groups) >= 1, started
        assert len(ports) == (2 if engine == "transform" else 0), ports
        os.kill(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        proc.communicate(timeout=60)
        deadline = killed + 120
        while time.monotonic() < deadline:
            if not _processes_of(mark, groups) and not any(map(_accepts, ports)):
                break
            time.sleep(0.5)
        assert _processes_of(mark, groups) == {}
        assert [port for port in ports if _accepts(port)] == []
        # Not the 25 s a request in flight gets from a stop with a reader for its answer.
        assert time.monotonic() - killed < GRACEFUL_TIMEOUT
    finally:
        for pid in _processes_of(mark, groups):  # a failed test leaves nothing running either
            os.kill(pid, signal.SIGKILL)
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
