"""Workers and native threads of the model processes, as each engine sets them: every
process's share of the cores for OpenMP/BLAS and PyTorch, a user's OMP_NUM_THREADS or
MKL_NUM_THREADS winning over the share, and SAGEMAKER_MODEL_SERVER_WORKERS honoured locally
as the image honours it."""

import pytest

from batchinfer.errors import ValidationError
from batchinfer.serving.server import configured_workers, cpu_count, native_thread_limits
from tests.support.cli import run_cli

REPORTER = """
import os

import torch

VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def model_fn(model_dir):
    return None


def predict_fn(data, model):
    seen = [str(os.getpid()), *(os.environ.get(v, "-") for v in VARIABLES)]
    return [[*seen, str(torch.get_num_threads())] for _ in data]
"""
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
    with pytest.raises(ValidationError, match=f"SAGEMAKER_MODEL_SERVER_WORKERS='{value}'"):
        configured_workers({"SAGEMAKER_MODEL_SERVER_WORKERS": value})


def _seen(capsys, tmp_path, engine: str, *env: str) -> list[list[str]]:
    """What each record's model process reported: pid, OMP, MKL, OpenBLAS, torch threads."""
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text(REPORTER)
    data = tmp_path / "in" / "rows.csv"
    data.parent.mkdir()
    data.write_text("".join(f"{n},{n}\n" for n in range(40)))
    out = tmp_path / "out"
    options = [part for pair in env for part in ("--env", pair)]
    code, said = run_cli(
        capsys,
        *("run", str(data.parent), "--model", str(model), "--output", str(out)),
        *("--engine", engine, "--batch-strategy", "SingleRecord", *SETTINGS, *options),
    )
    assert code == 0, said
    return [line.split(",") for line in (out / "rows.csv.out").read_text().splitlines()]


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_two_workers_share_the_cores(capsys, tmp_path, engine, monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    share = str(max(1, cpu_count() // 2))
    seen = _seen(capsys, tmp_path, engine, "SAGEMAKER_MODEL_SERVER_WORKERS=2")
    assert len(seen) == 40
    assert {tuple(row[1:]) for row in seen} == {(share, share, share, share)}


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_a_users_omp_num_threads_sets_every_pool_and_torch(capsys, tmp_path, engine):
    seen = _seen(capsys, tmp_path, engine, "OMP_NUM_THREADS=3", "MKL_NUM_THREADS=2")
    assert {tuple(row[1:]) for row in seen} == {("3", "2", "3", "2")}  # torch follows MKL


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_model_server_workers_from_the_environment_are_honoured(capsys, tmp_path, engine):
    seen = _seen(capsys, tmp_path, engine, "SAGEMAKER_MODEL_SERVER_WORKERS=1")
    assert len({row[0] for row in seen}) == 1  # one worker process answered every record
