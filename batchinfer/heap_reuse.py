"""Request-sized buffers reused from the heap, not mapped afresh for every request.

A model server worker allocates several buffers of a request's size for each request (the
body as it is read, the decoded array, the answer), and a processing worker the same for
each batch. glibc maps a block above its mmap
threshold as new pages, and gives the top of the heap back to the kernel once more than its
trim threshold is free there; both start small and only follow the largest block freed so
far (the trim threshold at twice it). A request's buffers together are more than that, so
each request took every page of them again as a page fault that zeroes it: about 1,900
faults, 5 ms of a core, for a 4 MiB ``.npy`` request, some 8 % of a worker's time.

With the thresholds set here, blocks under 32 MiB come from the heap, and up to 64 MiB of
free memory stays at the top of each of a process's heaps (arenas) for the next request:
a worker holds the pages of its largest requests between them instead of taking them
again, and a heap fragmented by a block that outlives its request can grow past the peak
it had. A user's own setting wins: where ``GLIBC_TUNABLES``, ``MALLOC_MMAP_THRESHOLD_`` or
``MALLOC_TRIM_THRESHOLD_`` is set, nothing is changed. Other C libraries (macOS, musl) are
left as they are.
"""

import os
from collections.abc import Mapping

MMAP_THRESHOLD = 32 * 1024 * 1024  # a block this large or larger is still mapped on its own
TRIM_THRESHOLD = 64 * 1024 * 1024  # the most free memory kept at the top of each heap
_M_TRIM_THRESHOLD = -1  # mallopt's parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
# The user's own settings, any of which leaves the thresholds as they are.
USER_SETTINGS = ("GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def reuse_freed_memory(env: Mapping[str, str] = os.environ) -> bool:
    """Set this process's glibc thresholds (processes it forks keep them); whether they
    were set: False with another C library, or where ``env`` holds the user's own."""
    if not _glibc() or any(name in env for name in USER_SETTINGS):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (ImportError, OSError, AttributeError):  # no ctypes, or no glibc to load
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def _glibc() -> bool:
    """Whether this process runs on glibc (its version string is ``glibc 2.36`` there)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # no confstr, or a name it does not know
        return False
