"""The fresh pages a process takes for buffers of a request's size, request after request."""

import os
import platform
import resource
from pathlib import Path

from batchinfer.heap_reuse import USER_SETTINGS

# Three buffers live at once, as a request's body, its decoded array and its answer are.
BUFFERS_MIB = (4, 6, 8)
# What every round takes where nothing is reused, in pages of this system's size.
PAGES = sum(BUFFERS_MIB) * 1024 * 1024 // resource.getpagesize()


def _pages_faulted_one_at_a_time() -> bool:
    """Whether fresh memory is faulted in a page at a time here, so that faults count
    pages: transparent huge pages are not on for every mapping."""
    try:
        setting = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return True
    return "[always]" not in setting


# Whether the tests that count page faults can run here: glibc's thresholds, each page a
# fault (the reason they give where not).
COUNTS_FRESH_PAGES = platform.libc_ver()[0] == "glibc" and _pages_faulted_one_at_a_time()
NOT_COUNTED = "counts the fresh pages of glibc's heap, faulted in a page at a time"


def faults_per_round(rounds: int = 4) -> list[int]:
    """The minor page faults of each round of writing the buffers and freeing them."""
    faults = []
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        buffers = [b"\1" * (mib << 20) for mib in BUFFERS_MIB]
        del buffers
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return faults


def without_malloc_settings() -> dict[str, str]:
    """This environment without glibc's malloc settings, which would win over the project's."""
    return {k: v for k, v in os.environ.items() if k not in USER_SETTINGS}
