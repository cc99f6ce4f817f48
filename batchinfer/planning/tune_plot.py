"""``batchinfer plan --tune --plot PATH``: the measured tuning curves as a PNG.

Left, the rate on the sample (rows/s, or objects/s for whole objects) against MaxPayloadInMB
(records per request), one line per MaxConcurrentTransforms (for whole objects, SplitType
None: against MaxConcurrentTransforms); right, when forward batches were swept, the rate
against the records of one forward pass at the pair they were swept at. Each point is the
median of its passes, its bar their spread; the recommended point is ringed. Drawn with
matplotlib, an optional dependency (``pip install 'batchinfer[plot]'``); the terminal bars
need nothing.
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
    """A matplotlib Figure of the measured points that fit the payload rule: the pairs on
    its first axes, the forward batches and the workers x threads (when swept) on more."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no display needed

    measured = [p for p in points if p.fits and p.rows_per_second is not None]
    layouts = sorted((p for p in measured if p.workers is not None), key=_workers)
    staged = [p for p in measured if p.workers is None]
    pairs = [p for p in staged if p.max_batch_records is None]
    batches = sorted(
        (p for p in staged if p.max_batch_records is not None), key=lambda p: p.forward_records
    )
    panels = 1 + bool(batches) + bool(layouts)
    figure = Figure(figsize=(max(7, 3.5 * panels), 4.5), dpi=100, layout="constrained")
    best = recommend(points)
    unit = points[0].unit if points else "rows/s"
    axes = figure.add_subplot(1, panels, 1)
    stage_one = best is not None and best.max_batch_records is None and best.workers is None
    if pairs and pairs[0].whole_objects:  # one request an object: concurrency alone
        line = sorted(pairs, key=lambda p: p.max_concurrent_transforms)
        counts = [p.max_concurrent_transforms for p in line]
        _curve(axes, line, counts, f"{line[0].max_payload_mb} MB, one object a request")
        _style(axes, counts, [str(c) for c in counts], "MaxConcurrentTransforms", unit)
        if best is not None and stage_one:
            _ring(axes, best.max_concurrent_transforms, best, f"{best.max_concurrent_transforms}")
    else:
        for concurrency in sorted({p.max_concurrent_transforms for p in pairs}):
            line = sorted(
                (p for p in pairs if p.max_concurrent_transforms == concurrency),
                key=lambda p: p.max_payload_mb,
            )
            label = f"MaxConcurrentTransforms {concurrency}"
            _curve(axes, line, [p.max_payload_mb for p in line], label)
        payloads = sorted({p.max_payload_mb for p in pairs})
        labels = [f"{mb} MB" for mb in payloads]
        _style(axes, payloads, labels, "MaxPayloadInMB (records per request)", unit)
        if best is not None and stage_one:
            chosen = f"{best.max_payload_mb} MB x {best.max_concurrent_transforms}"
            _ring(axes, best.max_payload_mb, best, chosen)
    axes.set_title("batchinfer plan --tune")
    if batches:
        right = figure.add_subplot(1, panels, 2, sharey=axes)
        sizes = [p.forward_records for p in batches]
        pair = batches[0]
        label = f"{pair.max_payload_mb} MB x {pair.max_concurrent_transforms}"
        _curve(right, batches, sizes, f"forward batches at {label}")
        _style(right, sizes, [f"{n:,}" for n in sizes], "records per forward pass", unit)
        if best is not None and best.max_batch_records is not None and best.workers is None:
            _ring(right, best.forward_records, best, f"{best.forward_records:,} per pass")
    if layouts:
        last = figure.add_subplot(1, panels, panels, sharey=axes)
        counts = [_workers(p) for p in layouts]
        _curve(last, layouts, counts, "cores shared as workers x threads")
        layout_labels = [f"{p.workers} x {p.threads}" for p in layouts]
        _style(last, counts, layout_labels, "workers x threads", unit)
        if best is not None and best.workers is not None:
            _ring(last, _workers(best), best, f"{best.workers} x {best.threads}")
    for drawn in figure.axes:
        if drawn.has_data():
            drawn.legend(loc="lower right", fontsize="small")
    return figure


def _curve(axes: Any, line: list[TunePoint], xs: list[int], label: str) -> None:
    """One line of medians, each with its passes' spread as an error bar."""
    ys = [_speed(p) for p in line]
    below = [y - p.slowest for y, p in zip(ys, line, strict=True)]
    above = [p.fastest - y for y, p in zip(ys, line, strict=True)]
    axes.errorbar(xs, ys, yerr=[below, above], marker="o", capsize=3, label=label)


def _ring(axes: Any, x: int, best: TunePoint, label: str) -> None:
    axes.plot(
        [x],
        [_speed(best)],
        marker="o",
        markersize=16,
        markerfacecolor="none",
        markeredgecolor="black",
        linestyle="none",
        label=f"recommended: {label}",
    )


def _style(axes: Any, ticks: list[int], labels: list[str], xlabel: str, unit: str) -> None:
    from matplotlib.ticker import StrMethodFormatter

    axes.set_xscale("log", base=2)
    axes.set_xticks(ticks, labels)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(f"{unit} on the sample")
    axes.set_ylim(bottom=0)
    axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    axes.grid(True, alpha=0.3)


def write_plot(points: list[TunePoint], path: Path) -> None:
    """Draw :func:`tune_figure` into the PNG ``path``."""
    try:
        tune_figure(points).savefig(path, format="png")
    except OSError as exc:
        raise ValidationError(f"--plot {path}: cannot write: {exc.strerror or exc}") from None


def _workers(point: TunePoint) -> int:
    assert point.workers is not None
    return point.workers


def _speed(point: TunePoint) -> float:
    """The rate of a measured point (the only ones plotted)."""
    assert point.rows_per_second is not None
    return point.rows_per_second
