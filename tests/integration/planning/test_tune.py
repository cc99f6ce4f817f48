"""``batchinfer plan --tune``: the grid of MaxPayloadInMB x MaxConcurrentTransforms, the pairs
the payload rule refuses (R1, R8), the choice of the fastest fitting point on given
measurements (their spread, and memory among points the sample cannot tell apart), where the
sweep stops and the forward batches it tries, a sweep on the real model server, and the
curves drawn as a PNG."""

import json
import sys
from dataclasses import dataclass, replace

import pytest

from batchinfer.planning import job_plan, tune
from batchinfer.planning.tune import TunePoint, grid, indistinct, recommend
from batchinfer.planning.tune_plot import tune_figure
from batchinfer.transform.settings import TransformSettings
from batchinfer.units import MIB
from tests.support.cli import run_cli

CSV = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]


def point(
    payload: int,
    concurrency: int,
    rows: float | None,
    fits: bool = True,
    *,
    spread: float = 0.0,
    batch: int | None = None,
) -> TunePoint:
    """A point measured at ``rows`` rows/s, its passes ``spread`` either side."""
    passes = () if rows is None else (rows - spread, rows, rows + spread)
    return TunePoint(
        payload, concurrency, 4096, fits, None if fits else "x", rows, None, batch, passes
    )


def test_a_point_the_sample_cannot_tell_from_the_fastest_wins_when_it_needs_less_memory():
    fastest = point(4, 1, 1100.0, spread=100.0)
    smaller = point(1, 1, 1000.0, spread=50.0)  # its median within 1,000-1,200: a smaller payload
    slower = point(2, 1, 550.0, spread=50.0)  # clearly slower
    assert recommend([fastest, smaller, slower]) == smaller
    assert recommend([fastest, slower]) == fastest
    assert not indistinct([fastest, smaller, slower])
    assert indistinct([fastest, smaller])


def test_of_tied_forward_batches_the_smaller_is_recommended_never_a_clearly_slower_one():
    points = [
        point(1, 2, 700.0, spread=10.0),  # the whole request in one pass
        point(1, 2, 300.0, spread=10.0, batch=64),
        point(1, 2, 1000.0, spread=10.0, batch=512),
        point(1, 2, 1005.0, spread=10.0, batch=1024),  # fastest, but tied with 512
        point(1, 2, 800.0, spread=10.0, batch=2048),
    ]
    assert recommend(points) == points[2]


def test_a_smaller_batch_whose_passes_only_overlap_the_fastests_is_not_recommended():
    """ONNX Runtime's network on a busy machine: 128 records a pass at 28-30 objects/s
    (median 29) beside 1,024 at 30-31 (median 31). Their passes overlap, but 128's median
    is below every pass of 1,024: the sample says it is slower, and it is not recommended;
    2,048, whose median lies within 1,024's passes, needs more memory."""

    def measured(batch: int, passes: tuple[float, float, float]) -> TunePoint:
        return TunePoint(6, 4, 34952, True, None, passes[1], 1, batch, passes, unit="objects/s")

    points = [
        measured(128, (28.0, 29.0, 30.0)),
        measured(1024, (30.0, 31.0, 31.4)),
        measured(2048, (30.0, 30.5, 31.0)),
        measured(4096, (25.0, 25.5, 26.0)),
    ]
    assert recommend(points) == points[1]
    within = replace(points[0], rows_per_second=30.2, passes=(29.0, 30.2, 30.5))
    assert recommend([points[1], within]) == within  # its median within 1,024's passes
    assert not indistinct(points)  # 4,096 is clearly slower
    assert indistinct(points[:3]), "no point's passes are all below the fastest's"


@dataclass
class FakeCalibration:
    runs: tuple[float, ...]
    requests: int = 3


def test_the_sweep_stops_a_dimension_once_throughput_clearly_falls(monkeypatch):
    """Along a concurrency, payloads rise until a point is clearly slower than the best
    before it; then forward batches at the recommended pair rise the same way."""
    speeds = {1: 500.0, 2: 900.0, 4: 400.0, 6: 950.0}  # by payload: falls at 4 MB

    def measured(model, engine, settings, *, records, passes):
        batch = settings.environment.get("BATCHINFER_MAX_BATCH_RECORDS")
        rows = (
            speeds[settings.max_payload_mb]
            if batch is None
            else {"64": 600.0, "128": 1200.0, "256": 300.0}.get(batch, 0.0)
        )
        return FakeCalibration((0.0, rows - 5, rows, rows + 5))  # a warm-up pass, then 3

    monkeypatch.setattr(tune, "calibrate", measured)
    records = [b"1,2,3\n"] * 1_000_000  # 5.7 MiB: payloads 1, 2, 4 and 6
    settings = TransformSettings.from_request({"split_type": "Line"})
    points = tune.sweep(None, settings, records, 6, 1)
    pairs = [(p.max_payload_mb, p.max_batch_records, p.rows_per_second) for p in points]
    assert pairs == [
        (1, None, 500.0),
        (2, None, 900.0),
        (4, None, 400.0),  # clearly slower than 2 MB: 6 MB is not tried
        (2, 64, 600.0),
        (2, 128, 1200.0),
        (2, 256, 300.0),  # clearly slower than 128: 512 and up are not tried
    ]
    assert recommend(points).max_batch_records == 128


def _layouts_measured(monkeypatch, speeds, batches=None, concurrencies=None):
    """Calibration from fixed speeds, by the last stage a point belongs to: workers x threads
    (``speeds`` keyed by workers), else forward batch (``batches``), else requests in flight
    (``concurrencies``); 1,000 rows/s where none is given; passes 5 rows/s either side."""

    def measured(model, engine, settings, *, records, passes):
        variables = settings.environment
        workers = variables.get("SAGEMAKER_MODEL_SERVER_WORKERS")
        batch = variables.get("BATCHINFER_MAX_BATCH_RECORDS")
        if workers is not None:
            assert int(variables["OMP_NUM_THREADS"]) * int(workers) == 4  # the 4 cores shared
            rows = speeds[int(workers)]
        elif batch is not None:
            rows = (batches or {}).get(int(batch), 1000.0)
        else:
            rows = (concurrencies or {}).get(settings.max_concurrent_transforms, 1000.0)
        return FakeCalibration((0.0, rows - 5, rows, rows + 5))

    monkeypatch.setattr(tune, "calibrate", measured)


def test_the_last_stage_shares_the_cores_as_workers_x_threads(monkeypatch):
    _layouts_measured(monkeypatch, {4: 1000.0, 2: 1400.0, 1: 900.0})
    records = [b"1,2,3\n"] * 1000
    settings = TransformSettings.from_request({"split_type": "Line"})
    points = tune.sweep(None, settings, records, 6, 4)
    layouts = [(p.workers, p.threads, p.rows_per_second) for p in points if p.workers]
    assert layouts == [(4, 1, 1000.0), (2, 2, 1400.0), (1, 4, 900.0)]
    best = recommend(points)
    assert (best.workers, best.threads) == (2, 2)
    assert tune.point_environment(best) == {
        "BATCHINFER_MAX_BATCH_RECORDS": "64",  # forward batches all tied: the smallest
        "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
        "OMP_NUM_THREADS": "2",
    }
    assert tune.worker_counts(1) == [] and tune.worker_counts(6) == [6, 2, 1]


def test_of_layouts_the_sample_cannot_tell_apart_the_fewer_workers_win(monkeypatch):
    _layouts_measured(monkeypatch, {4: 1000.0, 2: 1004.0, 1: 1002.0})  # all within 5 rows/s
    records = [b"1,2,3\n"] * 1000
    points = tune.sweep(None, TransformSettings.from_request({"split_type": "Line"}), records, 6, 4)
    assert recommend(points).workers == 1  # one copy of the model instead of four


def test_tune_prints_the_workers_and_threads_to_set(capsys, example_dir, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    _layouts_measured(monkeypatch, {4: 1000.0, 2: 1400.0, 1: 900.0})
    monkeypatch.setattr(job_plan, "sweep", _four_cores(tune.sweep))  # as on 4 cores
    printed = _tune(capsys, example_dir, 200)
    assert "2 workers x 2 threads" in printed
    assert "--env SAGEMAKER_MODEL_SERVER_WORKERS=2 --env OMP_NUM_THREADS=2" in printed


def _tune(capsys, example_dir, records: int, *options: str) -> str:
    """What ``plan --tune`` printed on the example's sample of ``records`` records."""
    code, printed = run_cli(
        capsys, "plan", str(example_dir / "input"), *CSV, "--model", str(example_dir / "model"),
        "--sample-records", str(records), "--tune", *options,
    )  # fmt: skip
    assert code == 0, printed
    return printed


def _four_cores(sweep):
    def on_four(model, settings, records, largest_record, local_cpus, on_point=lambda _p: None):
        return sweep(model, settings, records, largest_record, 4, on_point)

    return on_four


def test_a_sweep_where_no_point_is_clearly_slower_warns_and_says_what_is_recommended(
    capsys, example_dir, monkeypatch
):
    """Every point at 998-1,004 rows/s, passes 5 either side: none is clearly slower than
    the fastest (128 records a pass, 999-1,009), so the plan warns. 64 records a pass need
    less memory and their passes overlap the fastest's, but their median (998) is below
    them: the pick is 128 a pass, with the fewest workers measured at it."""
    _layouts_measured(
        monkeypatch, {4: 1000.0, 2: 1001.0, 1: 1002.0}, batches={64: 998.0, 128: 1004.0}
    )
    monkeypatch.setattr(job_plan, "sweep", _four_cores(tune.sweep))
    plan = json.loads(_tune(capsys, example_dir, 500, "--json"))
    (warning,) = [w for w in plan["warnings"] if w["code"] == "indistinct-tune-points"]
    assert warning["message"].startswith(
        "--tune: no point measured is clearly slower than the fastest (its fastest pass below "
        "the fastest's slowest)"
    )
    assert (
        "least memory among those whose median lies within the fastest's passes"
        in (warning["message"])
    )
    best = plan["tune"]["recommended"]
    assert (best["max_batch_records"], best["workers"]) == (128, 1)


def test_the_fastest_measured_pair_that_fits_is_recommended_not_a_faster_one_that_does_not():
    points = [
        point(1, 1, 100.0),
        point(2, 4, 300.0),
        point(1, 2, 900.0, fits=False),  # faster, but a job with it would fail (R8)
        point(4, 2, None),  # not measured
    ]
    assert recommend(points) == points[1]


def test_of_equal_speeds_the_smaller_payload_then_fewer_in_flight_is_recommended():
    points = [point(4, 1, 500.0), point(2, 2, 500.0), point(2, 1, 500.0), point(1, 1, 400.0)]
    assert recommend(points) == point(2, 1, 500.0)


def test_nothing_is_recommended_when_no_pair_fits_or_was_measured():
    assert recommend([point(1, 1, 900.0, fits=False), point(2, 1, None)]) is None


def test_the_grid_marks_the_pairs_the_payload_rule_refuses_r1_r8():
    # 3 MiB records, a 40 MiB sample, 64 CPUs: payloads 1..64 (64 holds the whole sample)
    points = grid(3 * MIB, 40 * MIB, 13, 64)
    payloads = sorted({p.max_payload_mb for p in points})
    assert payloads == [1, 2, 4, 6, 8, 16, 32, 64]
    assert {p.max_concurrent_transforms for p in points} == {1, 2, 4, 8, 16, 32, 64}
    by_pair = {(p.max_payload_mb, p.max_concurrent_transforms): p for p in points}
    small = by_pair[(2, 1)]
    assert not small.fits and "the largest record (3,145,728 bytes) is over 2 MB (R8)" in (
        small.reason
    )
    over = by_pair[(8, 16)]
    assert not over.fits and over.reason == "16 x 8 MB is over 100 MB (R1)"
    assert by_pair[(4, 16)].fits and by_pair[(6, 16)].fits
    assert all(p.rows_per_second is None for p in points), "the grid measures nothing"


def test_the_grid_tries_no_more_requests_in_flight_than_cpus_nor_payloads_past_the_sample():
    points = grid(100, 3 * MIB, 30_000, 2)
    assert {(p.max_payload_mb, p.max_concurrent_transforms) for p in points} == {
        (payload, concurrency) for payload in (1, 2, 4) for concurrency in (1, 2)
    }
    assert max(p.records_per_request for p in points) == 30_000


def test_tune_sweeps_the_sample_on_the_real_server_and_recommends_the_fastest_fitting_pair(
    capsys, example_dir
):
    code, printed = run_cli(
        capsys, "plan", str(example_dir / "input"), *CSV, "--model", str(example_dir / "model"),
        "--sample-records", "2000", "--tune", "--json",
    )  # fmt: skip
    assert code == 0, printed
    plan = json.loads(printed)
    points = plan["tune"]["points"]
    assert points and all(p["fits"] for p in points)
    assert all(p["rows_per_second"] > 0 and p["requests"] >= 1 for p in points)
    assert all(len(p["passes"]) == 3 for p in points)  # each point measured 3 times
    assert {p["max_batch_records"] for p in points} >= {None, 64, 128}  # forward batches too
    fastest = max(points, key=lambda p: p["rows_per_second"])
    chosen = plan["tune"]["recommended"]
    if chosen != fastest:  # only a point the sample cannot tell from it, needing less memory
        assert min(fastest["passes"]) <= chosen["rows_per_second"]  # its median within them
        forward = chosen["max_batch_records"] or chosen["records_per_request"]
        assert (chosen["max_payload_mb"], forward) <= (
            fastest["max_payload_mb"],
            fastest["max_batch_records"] or fastest["records_per_request"],
        )
    assert "small-tune-sample" in [w["code"] for w in plan["warnings"]]


def test_tune_prints_the_curve_and_the_options_to_use_and_draws_it_as_a_png(
    capsys, example_dir, monkeypatch, tmp_path
):
    """The printed curve and the PNG of a sweep whose measurements are fixed (the real
    server's sweep is the test above): each stage's points, its bars in one column, where
    each stage stopped and the options that set the recommended point."""
    monkeypatch.setenv("COLUMNS", "200")
    _layouts_measured(
        monkeypatch,
        {4: 1300.0, 2: 1500.0, 1: 1100.0},
        batches={64: 900.0, 128: 1300.0, 256: 1250.0, 512: 1000.0},
        concurrencies={1: 600.0, 2: 1000.0, 4: 1200.0},
    )
    monkeypatch.setattr(job_plan, "sweep", _four_cores(tune.sweep))  # as on 4 cores
    png = tmp_path / "curve.png"
    printed = _tune(capsys, example_dir, 500, "--plot", str(png))
    assert "tune: rows/s on the sample (median of 3 passes, slowest-fastest) by" in printed
    bars = [line for line in printed.splitlines() if "█" in line]
    labels = [line[: line.index("█")].strip() for line in bars]
    assert labels == [
        "1 MB (~500 rec) x 1",
        "1 MB (~500 rec) x 2",
        "1 MB (~500 rec) x 4",
        "1 MB (~500 rec) x 4, 64 per pass",
        "1 MB (~500 rec) x 4, 128 per pass",
        "1 MB (~500 rec) x 4, 256 per pass",  # clearly slower than 128: 512 is not tried
        "1 MB (~500 rec) x 4, 128 per pass, 4 workers x 1 thread",
        "1 MB (~500 rec) x 4, 128 per pass, 2 workers x 2 threads",
        "1 MB (~500 rec) x 4, 128 per pass, 1 worker x 4 threads",
    ]
    assert len({line.index("█") for line in bars}) == 1  # every bar starts in one column
    assert bars[7].endswith("1,500 rows/s (1,495-1,505)  <- recommended")
    assert (
        "recommended: --max-payload-mb 1 --max-concurrent-transforms 4 --max-batch-records 128 "
        "--env SAGEMAKER_MODEL_SERVER_WORKERS=2 --env OMP_NUM_THREADS=2 (1,500 rows/s"
    ) in printed
    assert f"tune: curve drawn in {png}" in printed
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from matplotlib.image import imread

    pixels = imread(png)
    assert pixels.shape[:2] == (450, 1050)  # pairs, forward batches, workers x threads
    assert pixels.std() > 0.05, "the image is not blank"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--tune: needs --model"),
        (["--model", "{model}", "--engine", "processing"], "--tune: needs --engine transform"),
        (
            ["--model", "{model}", "--split-type", "RecordIO"],
            "--tune: needs --split-type Line (records to batch) or None (whole objects)",
        ),
    ],
)
def test_tune_names_what_it_needs(capsys, example_dir, args, message):
    args = [a.format(model=example_dir / "model") for a in args]
    base = ["--content-type", "text/csv", "--accept", "text/csv"]
    split = [] if "--split-type" in args else ["--split-type", "Line"]
    code, printed = run_cli(
        capsys, "plan", str(example_dir / "input"), *base, *split, *args, "--tune"
    )
    assert code == 2 and message in printed, printed


def test_the_plot_draws_one_line_per_concurrency_and_rings_the_recommended_pair():
    points = [
        point(1, 1, 100.0),
        point(2, 1, 250.0),
        point(1, 2, 180.0),
        point(2, 2, 400.0),
        point(4, 2, 900.0, fits=False),  # not drawn: a job with it would fail (R1/R8)
        point(4, 1, None),  # not drawn: not measured
    ]
    axes = tune_figure(points).axes[0]
    # a curve: the data line of an error bar container; the ring: a line of its own
    curves = {c.get_label(): c.lines[0] for c in axes.containers}
    lines = curves | {
        line.get_label(): line for line in axes.get_lines() if line.get_label()[0] != "_"
    }
    assert set(lines) == {
        "MaxConcurrentTransforms 1",
        "MaxConcurrentTransforms 2",
        "recommended: 2 MB x 2",
    }
    one, two = lines["MaxConcurrentTransforms 1"], lines["MaxConcurrentTransforms 2"]
    assert (list(one.get_xdata()), list(one.get_ydata())) == ([1, 2], [100.0, 250.0])
    assert (list(two.get_xdata()), list(two.get_ydata())) == ([1, 2], [180.0, 400.0])
    ring = lines["recommended: 2 MB x 2"]
    assert (list(ring.get_xdata()), list(ring.get_ydata())) == ([2], [400.0])
    assert [t.get_text() for t in axes.get_xticklabels()] == ["1 MB", "2 MB"]


def test_the_plot_draws_the_forward_batches_with_their_spread_beside_the_pairs():
    points = [
        point(1, 1, 700.0, spread=20.0),
        point(1, 1, 300.0, spread=10.0, batch=64),
        point(1, 1, 1000.0, spread=30.0, batch=512),
    ]
    left, right = tune_figure(points).axes
    assert [c.get_label() for c in left.containers] == ["MaxConcurrentTransforms 1"]
    (batches,) = right.containers
    assert batches.get_label() == "forward batches at 1 MB x 1"
    assert list(batches.lines[0].get_xdata()) == [64, 512]
    assert list(batches.lines[0].get_ydata()) == [300.0, 1000.0]
    spans = batches.lines[2][0].get_segments()  # the error bars: slowest to fastest pass
    assert [(s[0][1], s[1][1]) for s in spans] == [(290.0, 310.0), (970.0, 1030.0)]
    rings = [line.get_label() for line in right.get_lines() if line.get_label()[0] != "_"]
    assert rings == ["recommended: 512 per pass"]


def test_the_plot_draws_workers_x_threads_on_axes_of_their_own():
    layouts = [
        TunePoint(1, 1, 4096, True, rows_per_second=r, passes=(r - 5, r, r + 5), workers=w,
                  threads=4 // w)
        for w, r in ((4, 1000.0), (2, 1400.0), (1, 900.0))
    ]  # fmt: skip
    figure = tune_figure([point(1, 1, 700.0), *layouts])
    pairs, shared = figure.axes
    assert [c.get_label() for c in pairs.containers] == ["MaxConcurrentTransforms 1"]
    (curve,) = shared.containers
    assert list(curve.lines[0].get_xdata()) == [1, 2, 4]
    assert list(curve.lines[0].get_ydata()) == [900.0, 1400.0, 1000.0]
    assert [t.get_text() for t in shared.get_xticklabels()] == ["1 x 4", "2 x 2", "4 x 1"]
    rings = [line.get_label() for line in shared.get_lines() if line.get_label()[0] != "_"]
    assert rings == ["recommended: 2 x 2"]


def test_plot_needs_tune_a_directory_and_names_the_install_step_without_matplotlib(
    capsys, example_dir, tmp_path, monkeypatch
):
    args = ["plan", str(example_dir / "input"), *CSV, "--model", str(example_dir / "model")]
    png = str(tmp_path / "curve.png")
    code, printed = run_cli(capsys, *args, "--plot", png)
    assert code == 2 and "--plot: needs --tune" in printed, printed
    nowhere = str(tmp_path / "missing" / "curve.png")
    code, printed = run_cli(capsys, *args, "--tune", "--plot", nowhere)
    assert code == 2 and "no such directory" in printed, printed
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    code, printed = run_cli(capsys, *args, "--tune", "--plot", png)
    assert code == 2 and "pip install 'batchinfer[plot]'" in printed, printed
    assert not (tmp_path / "curve.png").exists()


def test_plot_says_so_when_nothing_was_measured(capsys, example_dir, tmp_path):
    """The model refuses the sample (3 values a record, 10 features expected): the plan
    warns and the PNG is not written, which the command says rather than staying quiet."""
    data = tmp_path / "narrow.csv"
    data.write_bytes(b"1,2,3\n" * 200)
    png = tmp_path / "curve.png"
    code, printed = run_cli(
        capsys, "plan", str(data), *CSV, "--model", str(example_dir / "model"),
        "--tune", "--plot", str(png),
    )  # fmt: skip
    assert code == 0, printed
    assert "the model failed on the calibration sample" in printed
    assert f"tune: no curve drawn in {png}: nothing was measured" in printed
    assert not png.exists()
