"""A processing instance's pool of workers (P1: the image's Processing-job mode scores with
the model's handlers in-process, one worker per core): every worker loads the model at the
start, and a worker whose model did not load says why rather than failing blind."""

import json
import os
import subprocess
import sys
import textwrap

from batchinfer.engine import processing_job

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
