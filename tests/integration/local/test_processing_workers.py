"""A processing instance's pool of workers (P1: the image's Processing-job mode scores with
the model's handlers in-process, one worker per core): every worker loads the model at the
start, and a worker whose model did not load says why rather than failing blind."""

import json
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import joblib
import pytest

from batchinfer.engine import processing_job
from tests.support.fork_probe import LoadProbe
from tests.support.heap_probe import (
    COUNTS_FRESH_PAGES,
    NOT_COUNTED,
    PAGES,
    without_malloc_settings,
)

ROOT = Path(__file__).resolve().parents[3]  # where the probes' modules are

# Notes each load of the model (the worker's process id) in the file LOADS_FILE names.
COUNTING_MODULE = textwrap.dedent(
    """
    import os


    def model_fn(model_dir):
        with open(os.environ["LOADS_FILE"], "a") as loads:
            loads.write(f"{os.getpid()}\\n")
        return None


    def predict_fn(data, model):
        return data[:, 0]
    """
)


def test_p1_every_worker_loads_the_model_at_the_start_even_for_one_request(tmp_path):
    """A one-record input is one request; the instance still starts both workers at once,
    rather than the second as the pool shuts down (and waits for it to load)."""
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text(COUNTING_MODULE)
    data = tmp_path / "input"
    data.mkdir()
    (data / "one.csv").write_text("7,1\n")
    loads = tmp_path / "loads"
    settings = {"content_type": "text/csv", "accept": "text/csv", "split_type": "Line"}
    command = [
        sys.executable, "-m", "batchinfer", "process", f"--settings-json={json.dumps(settings)}",
        f"--input-dir={data}", f"--model-dir={model}", f"--output-dir={tmp_path / 'out'}",
        "--workers=2", f"--message-file={tmp_path / 'message'}",
    ]  # fmt: skip
    env = {**os.environ, "LOADS_FILE": str(loads)}

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "one.csv.out").read_text() == "7\n"
    assert len(set(loads.read_text().split())) == 2, "each worker loaded the model once"


def test_p8_a_worker_whose_model_did_not_load_answers_why(monkeypatch):
    monkeypatch.setattr(processing_job, "_handler", None)
    why = f"{processing_job.MODEL_LOAD_FAILED}: model.joblib: unpickling failed"
    monkeypatch.setattr(processing_job, "_load_error", why)

    status, body = processing_job._invoke(b"1,2\n", "text/csv", "text/csv")

    assert status == 500
    assert body == b"ModelLoadError: the model cannot be loaded: model.joblib: unpickling failed"


# An instance's forkserver started for argv[2] workers of the model directory argv[1], the
# job's environment argv[3], and one worker forked from it: whether the worker has
# scikit-learn loaded before any model, and what it sees of the variable that named the
# library to its forkserver.
FORKED_WORKER = """
import json, os, sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from batchinfer.engine.worker_server import LIBRARIES_VAR, start_worker_server

start_worker_server(int(sys.argv[2]), Path(sys.argv[1]), json.loads(sys.argv[3]))
with ProcessPoolExecutor(1, get_context("forkserver")) as pool:
    pid, variable = pool.submit(os.getpid).result(), pool.submit(os.getenv, LIBRARIES_VAR).result()
    loaded = "/sklearn/" in Path(f"/proc/{pid}/maps").read_text()
print(json.dumps([loaded, variable, os.environ.get(LIBRARIES_VAR)]))
"""


def _forked_worker(
    model: Path, workers: int = 2, job_environment: dict[str, str] | None = None, **env: str
) -> list[object]:
    done = subprocess.run(
        [sys.executable, "-c", FORKED_WORKER, str(model), str(workers),
         json.dumps(job_environment or {})],
        capture_output=True, text=True, timeout=120, check=True, env=os.environ | env,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_workers_fork_with_the_default_loaders_library_imported_once(tmp_path):
    """A scikit-learn model file without a user module: the forkserver imports the library
    as it starts, each worker forked from it has it; the variable that named it reaches
    none. One worker has nothing to share: it imports the library itself."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.joblib").write_bytes(b"")
    assert _forked_worker(model) == [True, None, None]
    assert _forked_worker(model, workers=1) == [False, None, None]
    (model / "code").mkdir()
    (model / "code" / "serve.py").write_text(COUNTING_MODULE)
    program = {"SAGEMAKER_PROGRAM": "serve.py"}  # the job's own environment names it
    assert _forked_worker(model, job_environment=program) == [False, None, None]


# A worker forked from the forkserver of an instance of one worker (model directory argv[1]):
# the fresh pages of each round of request-sized buffers it writes and frees.
FORKED_HEAP = """
import json, sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from batchinfer.engine.worker_server import start_worker_server
from tests.support.heap_probe import faults_per_round

start_worker_server(1, Path(sys.argv[1]))
with ProcessPoolExecutor(1, get_context("forkserver")) as pool:
    print(json.dumps(pool.submit(faults_per_round).result()))
"""


@pytest.mark.skipif(not COUNTS_FRESH_PAGES, reason=NOT_COUNTED)
def test_a_worker_keeps_the_memory_of_one_batchs_buffers_for_the_next(tmp_path):
    """The forkserver sets the heap's thresholds (batchinfer.heap_reuse) in every worker:
    after the first round, a round of a batch's buffers takes few fresh pages."""
    done = subprocess.run(
        [sys.executable, "-c", FORKED_HEAP, str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=True, cwd=ROOT,
        env=without_malloc_settings(),
    )  # fmt: skip
    faults = json.loads(done.stdout)
    assert faults[0] == pytest.approx(PAGES, rel=0.1)
    assert max(faults[1:]) < PAGES // 20, faults


def test_a_library_that_fails_to_import_is_left_to_the_workers(tmp_path):
    """multiprocessing's forkserver skips only an ImportError among its modules: any other
    failure is caught, and the forkserver still forks the workers (their own load reports
    it)."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.joblib").write_bytes(b"")
    broken = tmp_path / "site" / "sklearn"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise RuntimeError('a broken install')\n")
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    assert _forked_worker(model, PYTHONPATH=path) == [False, None, None]


def test_p1_a_jobs_model_archive_is_extracted_before_its_workers_share_the_library(tmp_path):
    """A Processing job gets its model as a folder holding model.tar.gz: the instance
    extracts it before it starts its forkserver, so its workers load the model with
    scikit-learn imported already (the model answers 1 when they do)."""
    model = tmp_path / "model"
    model.mkdir()
    joblib.dump(LoadProbe(False), tmp_path / "model.joblib")
    with tarfile.open(model / "model.tar.gz", "w:gz") as archive:
        archive.add(tmp_path / "model.joblib", "model.joblib")
    data = tmp_path / "input"
    data.mkdir()
    (data / "two.csv").write_text("1,2\n3,4\n")
    settings = {"content_type": "text/csv", "accept": "text/csv", "split_type": "Line"}
    for workers, imported in ((2, "1"), (1, "0")):
        out = tmp_path / f"out-{workers}"
        command = [
            sys.executable, "-m", "batchinfer", "process",
            f"--settings-json={json.dumps(settings)}", f"--input-dir={data}",
            f"--model-dir={model}", f"--output-dir={out}", f"--workers={workers}",
            f"--message-file={tmp_path / 'message'}",
        ]  # fmt: skip
        env = os.environ | {"PYTHONPATH": str(ROOT)}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert (out / "two.csv.out").read_text().split() == [imported, imported], workers
