"""The checks every section shares: known keys, lists, integer ranges, unique names, and the
one error form, ``<where>: <value> is not allowed; allowed: <what is>``."""

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from batchinfer.errors import ValidationError


def known_keys(
    raw: Mapping[str, Any], cls: type, where: str, exclude: frozenset[str] | set[str] = frozenset()
) -> dict[str, Any]:
    """``raw`` as a dict, when each of its keys is a field of the dataclass ``cls``."""
    known = {f.name for f in fields(cls)} - set(exclude)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValidationError(
            f"{where}: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(known))}"
        )
    return dict(raw)


def as_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValidationError(f"{where}: expected a list, got {value!r}")
    return value


def int_range(value: Any, low: int, high: int, where: str) -> None:
    require(
        isinstance(value, int) and not isinstance(value, bool) and low <= value <= high,
        where,
        value,
        f"an integer {low}..{high}",
    )


def require_unique(names: Iterable[str], where: str) -> None:
    names = list(names)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    require(not duplicates, where, duplicates, "unique names")


def require(ok: Any, where: str, value: Any, allowed: str = "") -> None:
    if not ok:
        raise ValidationError(
            f"{where}: {value!r} is not allowed" + (f"; allowed: {allowed}" if allowed else "")
        )
