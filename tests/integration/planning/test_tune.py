"""``batchinfer plan --tune``: the grid of MaxPayloadInMB x MaxConcurrentTransforms, the pairs
the payload rule refuses (R1, R8), the choice of the fastest fitting pair on given
measurements, a sweep on the real model server, and the curve drawn as a PNG."""

import json
import sys

import pytest

from batchinfer.planning.tune import TunePoint, grid, recommend
from batchinfer.planning.tune_plot import tune_figure
from batchinfer.units import MIB
from tests.support.cli import run_cli

CSV = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]


def point(payload: int, concurrency: int, rows: float | None, fits: bool = True) -> TunePoint:
    return TunePoint(payload, concurrency, 1, fits, None if fits else "x", rows)


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
    fastest = max(p["rows_per_second"] for p in points)
    assert plan["tune"]["recommended"]["rows_per_second"] == fastest
    assert "small-tune-sample" in [w["code"] for w in plan["warnings"]]


def test_tune_prints_the_curve_and_the_options_to_use(capsys, example_dir, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, printed = run_cli(
        capsys, "plan", str(example_dir / "input"), *CSV, "--model", str(example_dir / "model"),
        "--sample-records", "500", "--tune",
    )  # fmt: skip
    assert code == 0, printed
    assert "tune: rows/s on the sample by MaxPayloadInMB" in printed
    assert "█" in printed and "<- recommended" in printed
    assert "recommended: --max-payload-mb 1 --max-concurrent-transforms " in printed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--tune: needs --model"),
        (["--model", "{model}", "--engine", "processing"], "--tune: needs --engine transform"),
        (["--model", "{model}", "--split-type", "None"], "--tune: needs --split-type Line"),
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
    lines = {line.get_label(): line for line in axes.get_lines()}
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


def test_tune_plot_writes_the_curve_as_a_png(capsys, example_dir, tmp_path):
    from matplotlib.image import imread

    png = tmp_path / "curve.png"
    code, printed = run_cli(
        capsys, "plan", str(example_dir / "input"), *CSV, "--model", str(example_dir / "model"),
        "--sample-records", "500", "--tune", "--plot", str(png),
    )  # fmt: skip
    assert code == 0, printed
    assert f"tune: curve drawn in {png}" in printed
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(png)
    assert pixels.shape[:2] == (450, 700)
    assert pixels.std() > 0.05, "the image is not blank"


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
