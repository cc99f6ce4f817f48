"""``batchinfer plan --tune`` on whole objects (SplitType None, R6: each object one request):
MaxConcurrentTransforms alone in stage 1, up to two requests a core, within the sample's
objects and R1; forward batches below an object's records where its header says them; each
pass of the objects timed on the real model server; the curve printed and drawn."""

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from batchinfer.engine.inputs import InputFile
from batchinfer.engine.outcomes import FileOutcome
from batchinfer.planning import calibrate, tune
from batchinfer.planning.object_records import object_records
from batchinfer.planning.tune import object_grid, recommend
from batchinfer.planning.tune_plot import tune_figure
from batchinfer.transform.file_transform import FileStats
from batchinfer.transform.settings import TransformSettings
from tests.support.cli import run_cli

NPY = ["--content-type", "application/x-npy", "--accept", "text/csv", "--split-type", "None"]
NPY_SETTINGS = {"split_type": "None", "content_type": "application/x-npy", "accept": "text/csv"}


@dataclass(frozen=True)
class FakeCalibration:
    runs: tuple[float, ...]
    requests: int = 12


def _npy_objects(folder: Path, source: Path, objects: int, rows: int) -> list[InputFile]:
    """``objects`` .npy files of ``rows`` rows each, cut from the example's CSV."""
    folder.mkdir()
    values = np.loadtxt(source, delimiter=",", ndmin=2)
    files = []
    for number in range(objects):
        path = folder / f"part-{number}.npy"
        np.save(path, values[number * rows : (number + 1) * rows])
        files.append(InputFile(path, path.name))
    return files


def _scheduled(durations: list[float], slots: int) -> tuple[list, dict, dict]:
    """Outcomes of files taken in order by ``slots`` threads from one queue, each busy for
    its file's duration (named ``N-i``: pass N, object i), and when each was taken and done."""
    free = [0.0] * slots
    outcomes, taken, finished = [], {}, {}
    for number, duration in enumerate(durations):
        name = f"{number // 2}-{number % 2}"
        slot = free.index(min(free))
        taken[name], finished[name] = free[slot], free[slot] + duration
        free[slot] += duration
        stats = FileStats(1, None, 10, 1, 1, duration)
        outcomes.append(FileOutcome(InputFile(Path(name), name), 0, Path(name), stats))
    return outcomes, taken, finished


def test_overlapping_passes_of_objects_of_unequal_sizes_are_each_timed_by_littles_law():
    """Two objects a pass, of 1.0 s and 0.1 s, two in flight from one queue: passes overlap,
    and the last object of a pass may end after the next pass has ended. Each pass still
    reads as the 2 objects every 0.55 s that the instance moves (two slots, 1.1 s of work a
    pass), where timing each pass from the end of the one before read 20 and 2 objects/s."""
    outcomes, taken, finished = _scheduled([1.0, 0.1] * 5, slots=2)
    sojourns = calibrate._Sojourns()
    sojourns.taken, sojourns.finished = taken, finished
    runs = sojourns.runs(outcomes[:8], 4, 2)  # 4 timed passes; the fifth, untimed, goes last
    assert runs == pytest.approx([2 / 0.55] * 4)


def test_the_concurrencies_rise_to_two_a_core_within_the_objects_and_r1():
    def tried(points):
        return [(p.max_concurrent_transforms, p.fits) for p in points]

    points = object_grid(6, 8, 2, 300)
    assert tried(points) == [(1, True), (2, True), (4, True)]  # two a core on 2 cores
    assert all(p.whole_objects and p.unit == "objects/s" for p in points)
    assert {p.records_per_request for p in points} == {300}
    assert tried(object_grid(6, 3, 2)) == [(1, True), (2, True)]  # a pass of 3 fills no more
    # R1: MaxConcurrentTransforms x MaxPayloadInMB at most 100, so 4 x 32 MB is listed unmeasured
    assert tried(object_grid(32, 16, 4)) == [(1, True), (2, True), (4, False), (8, False)]
    assert "4 x 32 MB is over 100 MB (R1)" in object_grid(32, 16, 4)[2].reason
    assert tried(object_grid(0, 16, 4)) == [(c, True) for c in (1, 2, 4, 8)]  # 0: no limit (R8)
    assert tried(object_grid(6, 0, 2)) == [(1, True)]


def test_the_concurrency_rises_until_it_falls_then_forward_batches_below_an_objects_records(
    monkeypatch, tmp_path, example_dir
):
    objects = _npy_objects(tmp_path / "npy", example_dir / "input" / "data.csv", 4, 300)
    by_concurrency = {1: 10.0, 2: 18.0, 4: 9.0}  # falls at 4
    by_batch = {"64": 15.0, "128": 25.0, "256": 24.0}
    seen = []

    def measured(model, engine, settings, *, objects, header, passes):
        seen.append((len(objects), header, passes))
        batch = settings.environment.get("BATCHINFER_MAX_BATCH_RECORDS")
        workers = settings.environment.get("SAGEMAKER_MODEL_SERVER_WORKERS")
        speed = by_concurrency[settings.max_concurrent_transforms]
        if batch is not None:
            speed = by_batch[batch] if workers is None else {"2": 26.0, "1": 12.0}[workers]
        return FakeCalibration((0.0, speed - 0.5, speed, speed + 0.5))

    monkeypatch.setattr(tune, "calibrate", measured)
    settings = TransformSettings.from_request({**NPY_SETTINGS, "max_payload_mb": 6})
    points = tune.sweep_objects(None, settings, objects, 2, header=True)
    assert [
        (p.max_concurrent_transforms, p.max_batch_records, p.workers, p.rows_per_second)
        for p in points
    ] == [
        (1, None, None, 10.0),
        (2, None, None, 18.0),
        (4, None, None, 9.0),  # clearly slower than 2 in flight
        (2, 64, None, 15.0),  # the batches below the 300 records of an object
        (2, 128, None, 25.0),
        (2, 256, None, 24.0),  # not clearly slower than 128 (passes overlap): the last below 300
        (2, 128, 2, 26.0),
        (2, 128, 1, 12.0),
    ]
    assert seen and set(seen) == {(4, True, 4)}  # every object, a warm-up pass and 3 timed
    assert {p.max_payload_mb for p in points} == {6}  # the job's: each object is one request
    best = recommend(points)
    assert (best.max_concurrent_transforms, best.max_batch_records, best.workers) == (2, 128, 2)
    assert best.unit == "objects/s" and best.records_per_request == 300


def test_an_objects_records_are_read_from_its_header_where_its_type_has_one(tmp_path):
    def records(name: str, data: bytes, **request) -> int | None:
        path = tmp_path / name
        path.write_bytes(data)
        return object_records(InputFile(path, name), TransformSettings.from_request(request))

    array = np.zeros((1234, 7), dtype=np.float32)
    path = tmp_path / "a.npy"
    np.save(path, array)
    data = path.read_bytes()
    npy = {"split_type": "None", "content_type": "application/x-npy"}
    assert records("b.npy", data, **npy) == 1234
    assert records("c.npy.gz", gzip.compress(data), **npy, compression_type="Gzip") == 1234
    assert records("d.npy", b"not an array", **npy) is None  # the run names the fault
    assert records("e.csv", b"1,2\n3,4\n", split_type="None", content_type="text/csv") is None
    table = pa.table({"x": np.arange(321.0), "y": np.arange(321.0)})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=100)
    parquet = (tmp_path / "t.parquet").read_bytes()
    assert records("f.parquet", parquet, content_type="application/x-parquet") == 321


def test_tune_on_npy_objects_times_each_pass_on_the_real_server(capsys, example_dir, tmp_path):
    """Three objects of 400 rows: 1 and 2 in flight (no more than a pass's objects), forward
    batches below 400, and on more than one core workers x threads, each point's three
    passes timed; too few objects to try two requests a core are warned of."""
    _npy_objects(tmp_path / "npy", example_dir / "input" / "data.csv", 3, 400)
    code, printed = run_cli(
        capsys, "plan", str(tmp_path / "npy"), *NPY, "--model", str(example_dir / "model"),
        "--tune", "--json",
    )  # fmt: skip
    assert code == 0, printed
    plan = json.loads(printed)
    points = plan["tune"]["points"]
    assert all(p["whole_objects"] and p["unit"] == "objects/s" for p in points)
    assert all(p["records_per_request"] == 400 and p["max_payload_mb"] == 6 for p in points)
    assert {p["max_concurrent_transforms"] for p in points} == {1, 2}
    assert all(p["requests"] == 3 for p in points)  # one a pass for each object
    # Each pass timed, at a rate an instance of two workers can move: an object is an HTTP
    # request of 400 rows, so ten thousand a second would be a pass mistimed.
    assert all(len(p["passes"]) == 3 and 0 < min(p["passes"]) <= max(p["passes"]) < 10_000
               for p in points)  # fmt: skip
    batches = {p["max_batch_records"] for p in points} - {None}
    assert 64 in batches and max(batches) < 400
    cpus = os.cpu_count() or 1
    assert {p["workers"] for p in points} - {None} == set(tune.worker_counts(cpus))
    assert plan["tune"]["recommended"] in points
    codes = [w["code"] for w in plan["warnings"]]
    assert ("few-tune-objects" in codes) == (2 * cpus >= 4)  # 4 in flight needs 4 objects


def test_the_curve_of_whole_objects_is_printed_and_drawn_against_the_concurrency(
    capsys, example_dir, tmp_path, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "200")
    _npy_objects(tmp_path / "npy", example_dir / "input" / "data.csv", 8, 100)
    speeds = {1: 10.0, 2: 19.0, 4: 20.0}

    def measured(model, engine, settings, *, objects, header, passes):
        speed = speeds[settings.max_concurrent_transforms]
        return FakeCalibration((0.0, speed - 0.2, speed, speed + 0.2))

    monkeypatch.setattr(tune, "calibrate", measured)
    monkeypatch.setattr(tune, "worker_counts", lambda _cpus: [])
    code, printed = run_cli(
        capsys, "plan", str(tmp_path / "npy"), *NPY, "--model", str(example_dir / "model"),
        "--tune",
    )  # fmt: skip
    assert code == 0, printed
    assert "by MaxConcurrentTransforms (one whole object a request)" in printed
    assert "6 MB (1 object, ~100 rec) x 2" in printed and "19 objects/s (19-19)" in printed
    assert "recommended: --max-payload-mb 6 --max-concurrent-transforms 4" in printed
    settings = TransformSettings.from_request({**NPY_SETTINGS, "max_payload_mb": 6})
    objects = [InputFile(p, p.name) for p in sorted((tmp_path / "npy").iterdir())]
    figure = tune_figure(tune.sweep_objects(None, settings, objects, 2))
    axes = figure.axes[0]
    assert axes.get_xlabel() == "MaxConcurrentTransforms"
    assert axes.get_ylabel() == "objects/s on the sample"
    assert [t.get_text() for t in axes.get_xticklabels()] == ["1", "2", "4"]


def test_a_parquet_objects_speed_is_in_rows(monkeypatch, tmp_path):
    """A Parquet object's records are its rows, so its sweep counts rows/s."""
    monkeypatch.setattr(tune, "calibrate", lambda *a, **k: FakeCalibration((0.0, 1.0, 1.0, 1.0)))
    monkeypatch.setattr(tune, "worker_counts", lambda _cpus: [])
    pq.write_table(pa.table({"x": np.arange(50.0)}), tmp_path / "t.parquet")
    settings = TransformSettings.from_request(
        {"split_type": "None", "content_type": "application/x-parquet"}
    )
    objects = [InputFile(tmp_path / "t.parquet", "t.parquet")]
    points = tune.sweep_objects(None, settings, objects, 2)
    assert {p.unit for p in points} == {"rows/s"}
    assert {p.records_per_request for p in points} == {50}
