"""Figures as the commands show them to people: counts, sizes, dollars, durations."""

import math


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


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
