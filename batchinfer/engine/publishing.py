"""A local job's outputs put in place as each input is done, whole (R19: a file with any
failed record gets no output), and its ``_manifest.json`` kept up to date with them, so a
run stopped any way can be resumed (:mod:`batchinfer.engine.previous_run`)."""

import json
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from batchinfer.engine.input_groups import InputGroup
from batchinfer.engine.inputs import (
    InputFile,
)
from batchinfer.engine.job_result import (
    INTERRUPTED,
    RUNNING,
    FileResult,
    JobResult,
    peak_memory_mib,
)
from batchinfer.engine.job_spec import LocalJob
from batchinfer.engine.outcomes import FileOutcome, Progress
from batchinfer.engine.output_place import OutputPlace
from batchinfer.engine.previous_run import (
    input_version,
)
from batchinfer.transform.assemble import RESULT_MANIFEST, SUCCESS_MARKER

# While inputs are done, ``_manifest.json`` is rewritten at most this often.
MANIFEST_INTERVAL_SECONDS = 2.0


@dataclass
class RunRecord:
    """What ``_manifest.json`` says of a job, at any point of its run."""

    job: LocalJob
    place: OutputPlace
    started_at: str
    started: float
    inputs: list[InputFile]
    digests: dict[str, str]
    kept: dict[str, dict[str, Any]]
    results: dict[str, FileResult] = field(default_factory=dict)
    user_module: str | None = None
    missing_imports: list[str] = field(default_factory=list)
    effective: dict[str, Any] | None = None
    startup_seconds: float | None = None
    transform_seconds: float = 0.0

    def result(self, status: str) -> JobResult:
        """The job's result; FAILED in place of SUCCEEDED where an input did not succeed.
        While it runs, only the inputs done are listed; at the end, every input."""
        files = [self._file(i, status) for i in self.inputs if status != RUNNING or self._done(i)]
        if status == "SUCCEEDED" and any(f.status != "SUCCEEDED" for f in files):
            status = "FAILED"
        startup = self.startup_seconds
        return JobResult(
            status=status,
            output_dir=self.place.location,
            engine=self.job.engine,
            started_at=self.started_at,
            seconds=round(time.perf_counter() - self.started, 3),
            settings=asdict(self.job.settings),
            effective=self.effective,
            files=files,
            engine_max_rss_mib=peak_memory_mib(),
            user_module=self.user_module,
            user_module_missing_imports=self.missing_imports,
            startup_seconds=startup,
            transform_seconds=round(self.transform_seconds - (startup or 0.0), 3),
            endpoint_url=self.job.endpoint_url,
            digests=self.digests,
            kept_inputs=len(self.kept),
        )

    def _done(self, file: InputFile) -> bool:
        return file.name in self.kept or file.name in self.results

    def _file(self, file: InputFile, status: str) -> FileResult:
        if file.name in self.kept:
            known = {f.name for f in fields(FileResult)}
            return FileResult(**{k: v for k, v in self.kept[file.name].items() if k in known})
        if file.name in self.results:
            return self.results[file.name]
        # Never split nor started: the run stopped first.
        return FileResult(
            name=file.name,
            input=file.where,
            outputs=[],
            status=INTERRUPTED if status == INTERRUPTED else "FAILED",
            error="interrupted (Ctrl-C) before it was done",
            input_version=input_version(file),
        )

    def write(self, result: JobResult, *, final: bool = False) -> None:
        """``_manifest.json`` for ``result``; at the end, ``_SUCCESS`` when it succeeded and
        none otherwise (one an earlier run left is removed)."""
        self.place.put_text(RESULT_MANIFEST, json.dumps(result.to_json(), indent=2) + "\n")
        if final and result.succeeded:
            self.place.put_text(SUCCESS_MARKER, "")
        elif final:
            self.place.remove([SUCCESS_MARKER])


class Publisher(Progress):
    """Puts each input's outputs in place as soon as every unit of it is done, whole (R19:
    none of an input that failed), then rewrites ``_manifest.json``; every callback also
    goes on to ``progress``. The first output put in place removes an earlier run's
    ``_SUCCESS``: until then the output folder is as it was. Outputs an earlier run
    recorded for an input (``replaced``, by input name) go once this run's are in place, so
    no stale shard output stands beside them."""

    def __init__(
        self,
        record: RunRecord,
        progress: Progress,
        workdir: Path,
        replaced: dict[str, list[str]],
    ) -> None:
        self.record = record
        self.progress = progress
        self._replaced = replaced
        self.staging = workdir / "outputs"
        self._merging = workdir / "merged"
        self._groups: list[InputGroup] = []
        self._group_of: dict[str, InputGroup] = {}
        self._outcomes: dict[str, FileOutcome] = {}
        self._lock = threading.Lock()
        self._retracted = False
        self._written = 0.0

    def add(self, groups: list["InputGroup"]) -> None:
        self._groups += groups
        self._group_of.update({unit.name: group for group in groups for unit in group.units})

    def units(self) -> list[InputFile]:
        return [unit for group in self._groups for unit in group.units]

    def instances_ready(self, count: int) -> None:
        self.progress.instances_ready(count)

    def file_started(self, instance: int, file: InputFile) -> None:
        self.progress.file_started(instance, file)

    def file_progress(self, instance: int, file: InputFile, done: int) -> None:
        self.progress.file_progress(instance, file, done)

    def file_finished(self, outcome: FileOutcome) -> None:
        if outcome.file.fetch is not None:  # bytes of an S3 object fetched for it: read no more
            outcome.file.path.unlink(missing_ok=True)
        with self._lock:
            self._outcomes[outcome.file.name] = outcome
            group = self._group_of[outcome.file.name]
            if all(unit.name in self._outcomes for unit in group.units):
                self._finish(group)
                if time.monotonic() - self._written >= MANIFEST_INTERVAL_SECONDS:
                    self._written = time.monotonic()
                    self.record.write(self.record.result(RUNNING))
        self.progress.file_finished(outcome)

    def finish(self, stopped: str | None = None) -> None:
        """Record every input not yet done: interrupted, or failed (``stopped`` says why)."""
        with self._lock:
            for group in self._groups:
                if group.source.name not in self.record.results:
                    self._finish(group, stopped)

    def stopped(self, why: str) -> None:
        """The engine failed: record what is done so that ``--resume`` can go on from it."""
        if self._retracted:
            self.finish(why)
            self.record.write(self.record.result("FAILED"), final=True)

    def _finish(self, group: "InputGroup", stopped: str | None = None) -> None:
        result = group.result(self._outcomes, self.record.job, self.staging, self._merging)
        if stopped and result.status != "SUCCEEDED":
            result.status, result.error = "FAILED", stopped
        if result.status == "SUCCEEDED":
            if not self._retracted:
                self.record.place.remove([SUCCESS_MARKER])
                self._retracted = True
            staged = self._merging if group.merged else self.staging
            for name in result.outputs:
                self.record.place.put_file(staged / name, name)
            stale = set(self._replaced.get(group.source.name, [])) - set(result.outputs)
            self.record.place.remove(sorted(stale))
        self.record.results[group.source.name] = result
