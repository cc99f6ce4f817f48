"""What `batchinfer run` shows while it works and after: per-request progress, the summary."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console

from batchinfer.commands.run_display import LiveProgress
from batchinfer.engine.inputs import InputFile
from batchinfer.engine.local_job import LocalJob, run_job
from batchinfer.engine.outcomes import FileOutcome, Progress
from batchinfer.transform.settings import TransformSettings

CSV = dict(content_type="text/csv", accept="text/csv", split_type="Line")


class Recorder(Progress):
    """Every callback, in order."""

    def __init__(self) -> None:
        self.events: list[tuple] = []
        self._lock = threading.Lock()

    def job_started(self, total_bytes: int) -> None:
        self.events.append(("job", total_bytes))

    def file_started(self, instance: int, file: InputFile) -> None:
        with self._lock:
            self.events.append(("start", instance, file.name))

    def file_progress(self, instance: int, file: InputFile, done: int) -> None:
        with self._lock:
            self.events.append(("bytes", instance, file.name, done))

    def file_finished(self, outcome: FileOutcome) -> None:
        with self._lock:
            self.events.append(("end", outcome.instance, outcome.file.name))


def _inputs(tmp_path: Path) -> list[Path]:
    paths = []
    for name, rows in (("a.csv", 40), ("b.csv", 25)):
        path = tmp_path / "in" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"1,2\n" * rows)
        paths.append(path)
    return paths


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_bytes_advance_per_request_per_file_and_instance_r7(tmp_path, row_sum_model, engine):
    paths = _inputs(tmp_path)
    settings = TransformSettings(**CSV, batch_strategy="SingleRecord", instance_count=2)
    recorder = Recorder()
    job = LocalJob(paths, tmp_path / "out", row_sum_model, settings, engine=engine)
    result = run_job(job, recorder)
    assert result.succeeded
    sizes = {p.name: p.stat().st_size for p in paths}
    assert recorder.events[0] == ("job", sum(sizes.values()))
    for name, size in sizes.items():
        told = [e[3] for e in recorder.events if e[0] == "bytes" and e[2] == name]
        assert len(told) == 40 if name == "a.csv" else 25  # one per request (SingleRecord)
        assert told == sorted(told) and told[-1] == size
        [instance] = {e[1] for e in recorder.events if e[0] != "job" and e[2] == name}
        [entry] = [f for f in result.files if f.name == name]
        assert entry.instances == [instance + 1]  # people count instances from 1


def test_live_display_totals_are_known_numbers_and_complete_at_the_end(tmp_path):
    files = [InputFile(p, p.name) for p in _inputs(tmp_path)]
    console = Console(record=True, width=160, force_terminal=False)
    with LiveProgress(console, 2) as live:
        live.job_started(sum(f.size for f in files))
        live.instances_ready(2)
        for instance, file in enumerate(files):
            live.file_started(instance, file)
            live.file_progress(instance, file, file.size // 2)
            live.file_progress(instance, file, file.size)
            live.file_finished(FileOutcome(file, instance, Path("unused")))
    shown = console.export_text()
    assert "?" not in shown
    assert "all files 2 of 2 done" in shown
    assert "instance 1: a.csv 100%" in shown and "instance 2: b.csv 100%" in shown
    tasks = live._bars.tasks
    assert all(task.total == task.completed for task in tasks)
    assert tasks[0].total == sum(f.size for f in files)


def test_an_interrupted_display_does_not_show_the_run_finished(tmp_path):
    [file, _] = [InputFile(p, p.name) for p in _inputs(tmp_path)]
    console = Console(record=True, width=160, force_terminal=False)
    with pytest.raises(KeyboardInterrupt), LiveProgress(console, 1) as live:
        live.job_started(file.size)
        live.file_started(0, file)
        live.file_progress(0, file, 4)
        raise KeyboardInterrupt
    shown = console.export_text()
    assert "interrupted" in shown and "instance 1: stopped" in shown
    assert "1 of 1 done" not in shown and "100%" not in shown


def _batchinfer(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "batchinfer", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("count", [1, 2])
def test_summary_has_plurals_a_legend_start_up_apart_and_instances_as_the_manifest(
    tmp_path, row_sum_model, count
):
    paths = _inputs(tmp_path)[:count]
    out = tmp_path / "out"
    csv = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]
    result = _batchinfer(
        "run", *paths, "--model", row_sum_model, "--output", out, "--instance-count", "2", *csv
    )
    assert result.returncode == 0, result.stderr
    shown = " ".join(result.stdout.split())
    assert ("1 file " if count == 1 else "2 files ") in shown
    assert "1 files" not in shown
    assert "legend: " in shown and "numbered from 1, as in _manifest.json" in shown
    assert "s model server start-up" in shown and "s transform (the total row)" in shown
    manifest = json.loads((out / "_manifest.json").read_text())
    assert isinstance(manifest["startup_seconds"], float)
    assert isinstance(manifest["transform_seconds"], float)
    for entry in manifest["files"]:
        assert set(entry["instances"]) <= {1, 2}  # numbered from 1, as the table shows them
        row = next(line.split() for line in result.stdout.splitlines() if entry["name"] in line)
        assert row[:3] == [entry["name"], "1", ",".join(map(str, entry["instances"]))]
