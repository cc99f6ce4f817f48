"""``batchinfer plan --tune --plot PATH``: the measured tuning curve as a PNG.

rows/s on the sample against MaxPayloadInMB (records per request), one line per
MaxConcurrentTransforms, the recommended pair ringed. Drawn with matplotlib, an optional
dependency (``pip install 'batchinfer[plot]'``); the terminal bars need nothing.
"""

from pathlib import Path
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.planning.tune import TunePoint, recommend

INSTALL_HINT = "pip install 'batchinfer[plot]' (matplotlib)"


def check_plotting() -> None:
    """Raise ValidationError naming the install step when matplotlib is missing, before any
    measuring starts."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValidationError(f"--plot: needs matplotlib; {INSTALL_HINT}") from None


def tune_figure(points: list[TunePoint]) -> Any:
    """A matplotlib Figure of the measured pairs that fit the payload rule."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no display needed
    from matplotlib.ticker import StrMethodFormatter

    figure = Figure(figsize=(7, 4.5), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    measured = [p for p in points if p.fits and p.rows_per_second is not None]
    for concurrency in sorted({p.max_concurrent_transforms for p in measured}):
        line = sorted(
            (p for p in measured if p.max_concurrent_transforms == concurrency),
            key=lambda p: p.max_payload_mb,
        )
        axes.plot(
            [p.max_payload_mb for p in line],
            [_speed(p) for p in line],
            marker="o",
            label=f"MaxConcurrentTransforms {concurrency}",
        )
    best = recommend(points)
    if best is not None:
        axes.plot(
            [best.max_payload_mb],
            [_speed(best)],
            marker="o",
            markersize=16,
            markerfacecolor="none",
            markeredgecolor="black",
            linestyle="none",
            label=f"recommended: {best.max_payload_mb} MB x {best.max_concurrent_transforms}",
        )
    payloads = sorted({p.max_payload_mb for p in measured})
    axes.set_xscale("log", base=2)
    axes.set_xticks(payloads, [f"{mb} MB" for mb in payloads])
    axes.set_xlabel("MaxPayloadInMB (records per request)")
    axes.set_ylabel("rows/s on the sample")
    axes.set_ylim(bottom=0)
    axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    axes.set_title("batchinfer plan --tune")
    axes.grid(True, alpha=0.3)
    if measured:
        axes.legend(loc="lower right")
    return figure


def write_plot(points: list[TunePoint], path: Path) -> None:
    """Draw :func:`tune_figure` into the PNG ``path``."""
    try:
        tune_figure(points).savefig(path, format="png")
    except OSError as exc:
        raise ValidationError(f"--plot {path}: cannot write: {exc.strerror or exc}") from None


def _speed(point: TunePoint) -> float:
    """Rows a second of a measured point (the only ones plotted)."""
    assert point.rows_per_second is not None
    return point.rows_per_second
