"""A model server worker keeps the memory of one request's buffers for the next
(:mod:`batchinfer.heap_reuse`): a 4 MiB ``.npy`` request, once a few have been answered,
takes few fresh pages, where it took each page of its body, array and answer again."""

import io
import resource
from pathlib import Path

import numpy as np
import pytest

from batchinfer.heap_reuse import USER_SETTINGS
from batchinfer.serving.launcher import start_server
from tests.integration.serving.conftest import write_module
from tests.integration.serving.helpers import START_TIMEOUT, Client, child_pids
from tests.support.heap_probe import COUNTS_FRESH_PAGES, NOT_COUNTED

FIRST_COLUMN = """
def model_fn(model_dir):
    return None


def predict_fn(data, model):
    return data[:, 0]
"""
BODY_BYTES = 4 * 1024 * 1024
BODY_PAGES = BODY_BYTES // resource.getpagesize()


def _minor_faults(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


@pytest.mark.skipif(not COUNTS_FRESH_PAGES, reason=NOT_COUNTED)
def test_a_workers_requests_take_few_fresh_pages_once_it_has_answered_a_few(tmp_path, monkeypatch):
    for name in USER_SETTINGS:  # the server's environment is this one: the user's would win
        monkeypatch.delenv(name, raising=False)
    model_dir = tmp_path / "model"
    write_module(model_dir, FIRST_COLUMN)
    rows = np.random.default_rng(0).normal(size=(BODY_BYTES // 128, 32))  # float32: 128 B
    buffer = io.BytesIO()
    np.save(buffer, rows.astype(np.float32))
    body = buffer.getvalue()
    with start_server(model_dir, workers=1) as server:
        server.wait_healthy(START_TIMEOUT)
        client = Client(server.port)
        (worker,) = child_pids(server.process.pid)

        def answer() -> None:
            reply = client.invoke(body, "application/x-npy", "application/x-npy")
            assert reply.status == 200, reply.text
            assert np.array_equal(
                np.load(io.BytesIO(reply.body)).ravel(), rows[:, 0].astype(np.float32)
            )

        for _ in range(3):
            answer()
        before = _minor_faults(worker)
        for _ in range(5):
            answer()
        per_request = (_minor_faults(worker) - before) / 5
    assert per_request < BODY_PAGES / 4, f"{per_request:.0f} fresh pages a request"
