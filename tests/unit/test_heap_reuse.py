"""Freed request-sized buffers are reused from the heap, not faulted in afresh each round;
a user's own glibc malloc settings win. Each case runs in a fresh interpreter: the
thresholds are a process's own, and this one's may be set already."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.heap_probe import (
    COUNTS_FRESH_PAGES,
    NOT_COUNTED,
    PAGES,
    without_malloc_settings,
)

pytestmark = pytest.mark.skipif(not COUNTS_FRESH_PAGES, reason=NOT_COUNTED)
ROOT = Path(__file__).resolve().parents[2]  # where the probe's module is

PROBE = """
import json, sys
from batchinfer.heap_reuse import reuse_freed_memory
from tests.support.heap_probe import faults_per_round

set_here = reuse_freed_memory() if sys.argv[1] == "reuse" else None
print(json.dumps([set_here, faults_per_round()]))
"""


def _probe(step: str, **env: str) -> tuple[bool | None, list[int]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, step],
        capture_output=True, text=True, timeout=60, check=True, cwd=ROOT,
        env=without_malloc_settings() | env,
    )  # fmt: skip
    set_here, faults = json.loads(done.stdout)
    return set_here, faults


def test_request_buffers_freed_are_reused_without_faulting_their_pages_in_again():
    """glibc left alone gives the buffers back after every round and faults every page
    in again; once set, the rounds after the first take (almost) none."""
    assert _probe("default")[1][1:] == [pytest.approx(PAGES, rel=0.1)] * 3
    set_here, faults = _probe("reuse")
    assert set_here is True
    assert faults[0] == pytest.approx(PAGES, rel=0.1)
    assert max(faults[1:]) < PAGES // 20, faults


@pytest.mark.parametrize(
    "setting",
    [
        {"MALLOC_TRIM_THRESHOLD_": str(128 * 1024)},
        {"MALLOC_MMAP_THRESHOLD_": str(128 * 1024)},
        {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"},
    ],
)
def test_a_users_own_malloc_setting_wins(setting):
    set_here, faults = _probe("reuse", **setting)
    assert set_here is False
    assert min(faults[1:]) > PAGES // 2, "the user's thresholds, not these, still apply"
