"""The hourly price of an instance type in a region: ``--price`` overrides, else the
indicative table of :mod:`batchinfer.instances.price_table`."""

from dataclasses import dataclass

from batchinfer.errors import ValidationError
from batchinfer.instances.price_table import AS_OF, PRICES


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    source: str  # where the figure comes from, as the plan shows it


def parse_price_overrides(pairs: list[str] | None) -> dict[str, float]:
    """``["ml.m5.xlarge=0.2"]`` -> ``{"ml.m5.xlarge": 0.2}``, naming a malformed entry."""
    prices: dict[str, float] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        try:
            usd = float(value)
        except ValueError:
            usd = -1.0
        if not sep or not name.startswith("ml.") or not usd >= 0 or usd == float("inf"):
            raise ValidationError(
                f"--price: {pair!r} is not TYPE=USD_PER_HOUR with an ml.* type and a price of "
                "0 or more, e.g. ml.m5.xlarge=0.23"
            )
        prices[name] = usd
    return prices


def table_price(instance_type: str, region: str) -> float | None:
    """The table's price, or None for a region or type it does not hold."""
    _, family, size = [*instance_type.split("."), "", ""][:3]
    return PRICES.get(region, {}).get(family, {}).get(size)


def hourly_price(instance_type: str, region: str, overrides: dict[str, float]) -> Price | None:
    """The price to plan with: the override for ``instance_type``, else the table's."""
    if instance_type in overrides:
        return Price(overrides[instance_type], "--price")
    usd = table_price(instance_type, region)
    if usd is None:
        return None
    return Price(usd, f"indicative list price, {region}, as of {AS_OF}")


def known_regions() -> list[str]:
    return sorted(PRICES)
