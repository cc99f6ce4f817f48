"""The departures the suite corrects for are the ones docs/oracle.md lists, and every one is
checked by a test."""

from pathlib import Path

import pytest

from tests.conformance.oracle import departures

pytestmark = pytest.mark.oracle

HERE = Path(__file__).parent
DOC = HERE.parents[2] / "docs" / "oracle.md"
NAMES = [
    name for name, value in vars(departures).items() if isinstance(value, departures.Departure)
]


def test_every_departure_constant_is_in_all():
    assert {id(d) for d in departures.ALL} == {id(getattr(departures, n)) for n in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_each_departure_is_documented_with_its_rule_and_source(name):
    departure = getattr(departures, name)
    rows = [line for line in DOC.read_text().splitlines() if line.startswith(f"| `{name}` |")]
    assert len(rows) == 1, f"docs/oracle.md lists {name} {len(rows)} times"
    assert f"| {departure.rule} |" in rows[0]
    assert f"`{departure.source.split(' (')[0]}`" in rows[0]


@pytest.mark.parametrize("name", NAMES)
def test_each_departure_is_checked_by_a_test(name):
    tests = "".join(
        p.read_text() for p in HERE.glob("test_oracle_*.py") if p.name != Path(__file__).name
    )
    assert f"str({name})" in tests, f"no test asserts with departure {name} as its message"
