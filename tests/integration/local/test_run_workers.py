"""Workers and native threads of the model processes, as each engine sets them: every
process's share of the cores for OpenMP/BLAS and PyTorch, a user's OMP_NUM_THREADS or
MKL_NUM_THREADS winning over the share, SAGEMAKER_MODEL_SERVER_WORKERS honoured locally as
the image honours it, and on a machine with GPUs one worker per GPU, each seeing only its
own (this machine has none: the GPUs are the ids CUDA_VISIBLE_DEVICES names, which is all a
worker is told)."""

import threading

import pytest

from batchinfer.engine.local_instances import instance_gpus
from batchinfer.errors import ValidationError
from batchinfer.serving.server import cpu_count, least_used_gpu, native_thread_limits, visible_gpus
from batchinfer.transform.server_limits import configured_workers
from tests.integration.serving.helpers import START_TIMEOUT, Client
from tests.support.cli import run_cli

REPORTER = """
import os
import time

import torch

VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES")


def model_fn(model_dir):
    return None


def _meet():
    # Hold the request until REPORTER_WORKERS workers have each taken one (each leaves its
    # pid in the folder REPORTER_MEET names), so that requests sent at once reach different
    # workers; after REPORTER_SECONDS without them, stop waiting, for every request after too.
    folder = os.environ.get("REPORTER_MEET")
    if not folder:
        return
    open(os.path.join(folder, f"pid-{os.getpid()}"), "w").close()
    deadline = time.monotonic() + float(os.environ["REPORTER_SECONDS"])
    while time.monotonic() < deadline:
        met = os.listdir(folder)
        if "gave-up" in met or len(met) >= int(os.environ["REPORTER_WORKERS"]):
            return
        time.sleep(0.02)
    open(os.path.join(folder, "gave-up"), "w").close()


def predict_fn(data, model):
    seen = [str(os.getpid()), *(os.environ.get(v, "-") for v in VARIABLES)]
    _meet()
    return [[*seen, str(torch.get_num_threads())] for _ in data]
"""
# The most a request waits for the workers it should meet (a test that meets them waits none).
MEET_SECONDS = 60.0
# How long a second worker, were there one, has to take a request beside the first: longer
# than a worker takes to import torch and load the model, which it does as the run starts.
SECOND_WORKER_SECONDS = 5.0
SETTINGS = ("--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line")


def test_each_process_gets_a_share_and_the_variables_it_sets_win():
    share = str(max(1, cpu_count() // 2))
    every = dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"), share)
    assert native_thread_limits(1, {}) == {}  # one process: its libraries take every core
    assert native_thread_limits(2, {}) == every
    assert native_thread_limits(1, {"OMP_NUM_THREADS": "3"}) == {
        "OPENBLAS_NUM_THREADS": "3",
        "MKL_NUM_THREADS": "3",
    }
    assert native_thread_limits(2, {"MKL_NUM_THREADS": "1"}) == {
        "OMP_NUM_THREADS": share,
        "OPENBLAS_NUM_THREADS": share,
    }


@pytest.mark.parametrize("value", ["0", "two", "2000"])
def test_a_workers_setting_out_of_range_is_refused_naming_it(value):
    with pytest.raises(ValidationError, match=f"SAGEMAKER_MODEL_SERVER_WORKERS='?{value}'? is"):
        configured_workers({"SAGEMAKER_MODEL_SERVER_WORKERS": value})


def _meeting(tmp_path, workers: int, seconds: float = MEET_SECONDS) -> dict[str, str]:
    """The environment that has the first request held until ``workers`` workers have taken
    one, or ``seconds`` have passed (``REPORTER._meet``)."""
    folder = tmp_path / "met"
    folder.mkdir()
    return {
        "REPORTER_MEET": str(folder),
        "REPORTER_WORKERS": str(workers),
        "REPORTER_SECONDS": str(seconds),
    }


def _seen(
    capsys, tmp_path, engine: str, *env: str, instances: int = 1, meet: dict[str, str] | None = None
) -> list[list[str]]:
    """What each record's model process reported: pid, OMP, MKL, OpenBLAS, CUDA devices,
    torch threads; ``meet``: a :func:`_meeting` the workers have first."""
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text(REPORTER)
    env = (*env, *(f"{name}={value}" for name, value in (meet or {}).items()))
    data = tmp_path / "in" / "rows.csv"
    data.parent.mkdir()
    data.write_text("".join(f"{n},{n}\n" for n in range(40)))
    out = tmp_path / "out"
    options = [part for pair in env for part in ("--env", pair)]
    code, said = run_cli(
        capsys,
        *("run", str(data.parent), "--model", str(model), "--output", str(out)),
        *("--engine", engine, "--batch-strategy", "SingleRecord", *SETTINGS, *options),
        *("--instance-count", str(instances), "--shards", str(instances)),
    )
    assert code == 0, said
    written = "".join(path.read_text() for path in sorted(out.rglob("*.out")))  # shards too
    return [line.split(",") for line in written.splitlines()]


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_two_workers_share_the_cores(capsys, tmp_path, engine, monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    share = str(max(1, cpu_count() // 2))
    seen = _seen(capsys, tmp_path, engine, "SAGEMAKER_MODEL_SERVER_WORKERS=2")
    assert len(seen) == 40
    assert {(*row[1:4], row[5]) for row in seen} == {(share, share, share, share)}


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_a_users_omp_num_threads_sets_every_pool_and_torch(capsys, tmp_path, engine):
    seen = _seen(capsys, tmp_path, engine, "OMP_NUM_THREADS=3", "MKL_NUM_THREADS=2")
    assert {(*row[1:4], row[5]) for row in seen} == {("3", "2", "3", "2")}  # torch: MKL's


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_model_server_workers_from_the_environment_are_honoured(capsys, tmp_path, engine):
    meet = _meeting(tmp_path, 2, SECOND_WORKER_SECONDS)  # a second worker would take one
    seen = _seen(capsys, tmp_path, engine, "SAGEMAKER_MODEL_SERVER_WORKERS=1", meet=meet)
    assert len({row[0] for row in seen}) == 1  # one worker process answered every record


def test_the_gpus_a_process_sees_and_how_they_are_shared(monkeypatch):
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "0,1"}) == ["0", "1"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,-1,3"}) == ["2"]  # CUDA stops at -1
    assert least_used_gpu(["0", "1", "2"], ["0", "2"]) == "1"
    assert least_used_gpu(["0", "1"], ["0", "1", "1"]) == "0"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    assert instance_gpus(2) == [["4", "6"], ["5"]]
    assert instance_gpus(4) == [["4"], ["5"], ["6"], ["4"]]  # more instances than GPUs
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert instance_gpus(2) == [[], []]


def test_a_server_on_three_gpus_runs_one_worker_pinned_to_each(tmp_path, monkeypatch):
    from batchinfer.serving.launcher import start_server

    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text(REPORTER)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    server = start_server(model, workers=None, env=_meeting(tmp_path, 3))
    try:
        server.wait_healthy(START_TIMEOUT)
        client = Client(server.port)
        answers: list[str] = []
        calls = [
            threading.Thread(target=lambda: answers.append(client.invoke(b"1\n").text))
            for _ in range(6)
        ]
        for call in calls:
            call.start()
        for call in calls:
            call.join()
    finally:
        server.stop()
    by_worker = {line.split(",")[0]: line.split(",")[4] for line in answers}
    assert sorted(by_worker.values()) == ["0", "1", "2"]  # three workers, one GPU each


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_run_deals_the_gpus_to_its_instances(capsys, tmp_path, monkeypatch, engine):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    seen = _seen(capsys, tmp_path, engine, "OMP_NUM_THREADS=1", instances=2)
    assert {row[4] for row in seen} == {"0", "1"}
    assert len({row[0] for row in seen}) == 2  # one worker each


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_one_instance_on_two_gpus_runs_a_worker_pinned_to_each(
    capsys, tmp_path, monkeypatch, engine
):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    seen = _seen(capsys, tmp_path, engine, "OMP_NUM_THREADS=1", meet=_meeting(tmp_path, 2))
    by_worker = {row[0]: row[4] for row in seen}
    assert sorted(by_worker.values()) == ["0", "1"]


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_the_one_gpu_worker_gets_every_core_for_its_threads(capsys, tmp_path, monkeypatch, engine):
    """Threads are shared among the workers that run: one per GPU, not one per core."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    seen = _seen(capsys, tmp_path, engine, meet=_meeting(tmp_path, 2, SECOND_WORKER_SECONDS))
    assert len({row[0] for row in seen}) == 1
    assert {(*row[1:4], row[5]) for row in seen} == {("-", "-", "-", str(cpu_count()))}
