"""Throughput of the real model on a sample of the input, measured on this machine.

The sample goes through the engine a job would use, as ``batchinfer run`` runs it, on one
instance: a model server started by the local engine and its HTTP client (``transform``),
or the in-process handlers (``processing``), with one worker per core of this machine. Only
the time spent transforming is counted, not the server's start-up. Each worker has one
core; a sample of few requests keeps only as many busy, so the speed that scales to an
instance is the speed per busy CPU.
"""

import os
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from batchinfer.engine.inputs import InputFile
from batchinfer.engine.local_job import run_engine
from batchinfer.engine.outcomes import FileOutcome, Progress
from batchinfer.engines import Engine
from batchinfer.model_artifact import prepare_model_dir
from batchinfer.planning.estimate import Throughput, busy_cpus
from batchinfer.sharding import split
from batchinfer.transform.settings import TransformSettings

SAMPLE_NAME = "calibration-sample"


@dataclass(frozen=True)
class Calibration:
    engine: str
    records: int
    bytes: int
    seconds: float
    local_cpus: int
    busy_cpus: int  # the local CPUs the sample's requests kept busy
    effective: dict[str, Any]
    requests: int = 0  # the requests the sample took
    runs: tuple[float, ...] = ()  # rows/s of each pass over the sample, in order

    @property
    def rows_per_second(self) -> float:
        return self.records / self.seconds

    @property
    def bytes_per_second(self) -> float:
        return self.bytes / self.seconds

    @property
    def throughput(self) -> Throughput:
        return Throughput(
            self.rows_per_second,
            self.bytes_per_second,
            self.busy_cpus,
            f"one local {self.engine} instance on {self.records:,} sampled records, "
            f"{self.busy_cpus} of {self.local_cpus} CPUs busy",
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {
            "rows_per_second": self.rows_per_second,
            "bytes_per_second": self.bytes_per_second,
        }


class CalibrationFailed(Exception):
    """The model failed on the sample; the message names the file, record and reason."""


def calibrate(
    model: Path,
    engine: Engine,
    settings: TransformSettings,
    *,
    records: list[bytes] | None = None,
    objects: list[InputFile] | None = None,
    header: bool = False,
    passes: int = 1,
) -> Calibration:
    """Transform the sample (Line ``records``, or whole ``objects`` for SplitType None, each
    without its first line when the inputs start with a ``header``) with ``engine`` on one
    local instance and measure it; the sample goes through ``passes`` times, one pass after
    another on the same instance, each measured (``runs``). A pass of records is one file,
    timed alone. A pass of objects is every object, several in flight at once from one queue,
    so passes overlap: one more pass goes last, untimed and left out of the figures, so that
    every timed object is in flight beside as many others as the instance keeps, and each
    pass is measured by its objects' times in the engine (:class:`_Sojourns`)."""
    with tempfile.TemporaryDirectory(prefix="batchinfer-plan-") as scratch:
        work = Path(scratch)
        model_dir = prepare_model_dir(model, work)
        if records is not None:
            body = b"".join(records)
            units = []
            for number in range(1, passes + 1):
                name = SAMPLE_NAME if passes == 1 else f"{SAMPLE_NAME}-{number}"
                (work / name).write_bytes(body)
                units.append(InputFile(work / name, name))
            settings = replace(settings, compression_type="None")  # the sample is plain
            timed = len(units)
        else:
            sample = [_without_header(o, work, settings) if header else o for o in objects or []]
            rounds = passes + (passes > 1)  # the untimed last pass
            units = [
                o if passes == 1 else replace(o, name=f"{SAMPLE_NAME}-{number}/{o.name}")
                for number in range(1, rounds + 1)
                for o in sample
            ]
            timed = passes * len(sample)  # the untimed last pass left out of the figures
        clock = _Sojourns()
        report = run_engine(
            engine,
            units,
            work / "out",
            model_dir=model_dir,
            settings=replace(settings, instance_count=1),
            progress=clock,
        )
    failed = [o.error for o in report.outcomes if o.error]
    if failed:
        raise CalibrationFailed(failed[0])
    outcomes = report.outcomes[:timed]
    stats = [o.stats for o in outcomes if o.stats is not None]
    local_cpus = os.cpu_count() or 1
    requests = max((s.requests for s in stats), default=1)  # at once: files run one by one
    in_flight = report.effective.max_concurrent_transforms
    return Calibration(
        engine=engine,
        records=sum(s.records_in for s in stats),
        bytes=sum(s.bytes_in for s in stats),
        seconds=max(sum(s.seconds for s in stats), 1e-9),
        local_cpus=local_cpus,
        busy_cpus=max(1, min(requests, busy_cpus(engine, local_cpus, settings))),
        effective=asdict(report.effective),
        requests=sum(s.requests for s in stats),
        # Each pass's rate; with objects and one pass, each object's (its own time alone).
        runs=(
            clock.runs(outcomes, passes, in_flight)
            if records is None and passes > 1
            else tuple(s.records_in / max(s.seconds, 1e-9) for s in stats)
        ),
    )


class _Sojourns(Progress):
    """When the engine took each file and when it finished it, by name."""

    def __init__(self) -> None:
        self.taken: dict[str, float] = {}
        self.finished: dict[str, float] = {}

    def file_started(self, instance: int, file: InputFile) -> None:
        self.taken[file.name] = time.perf_counter()

    def file_finished(self, outcome: FileOutcome) -> None:
        self.finished[outcome.file.name] = time.perf_counter()

    def runs(self, outcomes: list[FileOutcome], passes: int, in_flight: int) -> tuple[float, ...]:
        """Records a second of each pass of ``outcomes`` (in order, each the same number of
        files), with ``in_flight`` files in the engine at every moment, as the queue keeps
        it: by Little's law the files leave at ``in_flight`` over their mean time in the
        engine (taken to finished, waiting at the server included), so a pass's rate is
        its records times ``in_flight`` over its files' summed times. Passes share the
        queue and overlap, so none has a start or an end of its own to time it by."""
        per_pass = len(outcomes) // passes
        rates = []
        for number in range(passes):
            done = outcomes[number * per_pass : (number + 1) * per_pass]
            spent = sum(self.finished[o.file.name] - self.taken[o.file.name] for o in done)
            records = sum(o.stats.records_in for o in done if o.stats is not None)
            rates.append(in_flight * records / max(spent, 1e-9))
        return tuple(rates)


def _without_header(file: InputFile, work: Path, settings: TransformSettings) -> InputFile:
    """A copy of ``file`` under ``work`` without its header line, as a job's split sends it."""
    index = split(
        str(file.path),
        str(work / "objects" / file.name),
        shards=1,
        header=True,
        compression_type=settings.compression_type,
    )
    return InputFile(Path(index.shards[0].uri), file.name)
