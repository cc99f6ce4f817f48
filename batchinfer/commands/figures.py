"""Figures as the commands show them to people: counts, sizes, dollars, durations."""

import math


def count(n: int, noun: str) -> str:
    """``1 file``, ``2 files``, ``1,024 records``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def abbreviated(n: float) -> str:
    """Up to 9,999 in full, above in three significant digits: 35.2k, 352k, 1.23M, 4.57G."""
    if round(n) < 10_000:
        return f"{n:,.0f}"
    units = ((1e3, "k"), (1e6, "M"), (1e9, "G"))
    scale, unit = next(((s, u) for s, u in units if float(f"{n / s:.3g}") < 1000), units[-1])
    value = float(f"{n / scale:.3g}")
    return f"{value:.{max(0, 2 - math.floor(math.log10(value)))}f}{unit}"


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"


def usd(amount: float) -> str:
    return "$" + decimal(amount)


def decimal(x: float) -> str:
    """Two decimals, or three significant digits below 1 (no exponent)."""
    if x >= 1 or x == 0:
        return f"{x:,.2f}"
    places = max(2, 2 - math.floor(math.log10(x)))
    return f"{x:.{places}f}"


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
