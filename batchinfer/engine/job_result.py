"""What a local job did, as ``_manifest.json`` records it: per input, its outputs, counts,
bytes and times; for the job, its status, settings and digests."""

import resource
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class FileResult:
    """One output of the job, as ``_manifest.json`` records it."""

    name: str
    input: str
    outputs: list[str]
    status: str
    records_in: int | None = None
    records_out: int | None = None
    # Records the model refused that were set aside in the errors file (``bad_records``
    # quarantine); None without quarantine.
    records_quarantined: int | None = None
    # Why records_out is null for a file that succeeded (R17: a CSV join adds the prediction to its
    # row, one line per record), else None.
    records_not_counted: str | None = None
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    rows_per_second: float | None = None
    shards: int | None = None
    # The instances that ran it, numbered from 1 as the summary and the progress show them.
    instances: list[int] = field(default_factory=list)
    error: str | None = None
    # The input's size and modification time when it was read (``--resume`` reruns an
    # input that changed since).
    input_version: str | None = None


@dataclass
class JobResult:
    # SUCCEEDED, FAILED, INTERRUPTED (Ctrl-C, SIGTERM) or, while it runs, RUNNING
    status: str
    output_dir: str
    engine: str
    started_at: str
    seconds: float
    settings: dict[str, Any]
    effective: dict[str, Any] | None  # None when interrupted before the engine resolved them
    files: list[FileResult]
    engine_max_rss_mib: float
    # The model's handler script (``code/inference.py``), relative to the model, or None.
    user_module: str | None = None
    # What the user module imports that batchinfer's image does not provide (nor its
    # code/requirements.txt): it would fail there.
    user_module_missing_imports: list[str] = field(default_factory=list)
    # Until every model server answered /ping (None for the processing engine), then the
    # transform itself; ``seconds`` is the whole run (also splitting, merging, recording).
    # For the endpoint engine, until its server answered /ping.
    startup_seconds: float | None = None
    transform_seconds: float = 0.0
    # The server the endpoint engine scored with.
    endpoint_url: str | None = None
    # SHA-256 of the settings and of the model, which ``--resume`` must find unchanged.
    digests: dict[str, str] = field(default_factory=dict)
    # Inputs an earlier run had done whose outputs ``--resume`` kept.
    kept_inputs: int = 0

    @property
    def succeeded(self) -> bool:
        return self.status == "SUCCEEDED"

    @property
    def failures(self) -> list[FileResult]:
        return [f for f in self.files if f.status != "SUCCEEDED"]

    @property
    def interrupted(self) -> bool:
        return self.status == INTERRUPTED

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        done = [f for f in self.files if f.records_in is not None]
        counted = all(f.records_out is not None for f in done)
        data["totals"] = {
            "files": len(self.files),
            "failed": len(self.failures),
            "records_in": sum(f.records_in or 0 for f in done),
            "records_out": sum(f.records_out or 0 for f in done) if counted else None,
            "records_quarantined": (
                sum(f.records_quarantined or 0 for f in done)
                if self.settings.get("bad_records") == "quarantine"
                else None
            ),
            "bytes_in": sum(f.bytes_in for f in self.files),
            "bytes_out": sum(f.bytes_out for f in self.files),
            # over the transform time, as each file's rate is over its own
            "rows_per_second": rate(sum(f.records_in or 0 for f in done), self.transform_seconds),
        }
        return data


INTERRUPTED = "INTERRUPTED"
# The status of a job whose manifest is written while it runs.
RUNNING = "RUNNING"


class JobInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the job's engine; ``result`` is what ``_manifest.json`` records."""

    def __init__(self, result: JobResult) -> None:
        super().__init__()
        self.result = result


def peak_memory_mib() -> float:
    """This process's peak resident memory. VmHWM, unlike ru_maxrss, is not inherited from
    the parent that started this process (Linux keeps ru_maxrss across exec)."""
    try:
        status = Path("/proc/self/status").read_text()
        kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    except (OSError, StopIteration):
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kib / 1024, 1)


def rate(records: int | None, seconds: float) -> float | None:
    return round(records / seconds, 1) if records is not None and seconds > 0 else None
