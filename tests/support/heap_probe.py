"""The fresh pages a process takes for buffers of a request's size, request after request."""

import os
import resource

# Three buffers live at once, as a request's body, its decoded array and its answer are.
BUFFERS_MIB = (4, 6, 8)
PAGES = sum(BUFFERS_MIB) * 256  # of 4 KiB: what every round takes where nothing is reused


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
    return {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_"))}
