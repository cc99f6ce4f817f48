"""Every rule id a module cites is a rule of docs/platform.md, named in words in that module.

A module is any ``.py`` file under ``batchinfer/``, ``stacks/`` and ``lambda/``; its whole
text is read (docstrings, comments and messages alike).

What counts as citing a rule:

- ``R``, ``C``, ``P`` or ``E`` and one or two digits, as a whole word: ``R8``, ``(C4)``,
  ``R12/R11``.
- A range, ``R5-R8`` (hyphen or en dash), cites the range as one unit: it is named in
  words as a whole, and its two ends must be rules.
- ``S`` and one or two digits only inside a list of ids (ids and ranges separated by ``,``,
  ``/`` or ``and``) that follows ``spec `` (``spec S1``, ``spec S4, S5``) or that is all a
  pair of parentheses holds, with at least two ids (``(R1, S3)``, ``(S4, S5)``). So
  ``S3`` the service (``in S3``, ``(S3 copies the bytes)``) and ``AwsSolutions-S1`` are
  never taken for a rule.

What counts as naming a cited id (or range) in words: somewhere in the module, the id
followed by ``:``, `` (`` or `` —``, then at least three words in a row. A word is a letter
followed by letters, apostrophes or hyphens (``record``, ``job's``); words are separated by
white space, commas and a comment's ``#`` at a line break. ``R8: a record larger than
MaxPayloadInMB fails its file`` names R8; ``(R8)`` and ``R12/R11: ``x.gz`` -> ...`` do not.

The rules that exist are those docs/platform.md defines: the bold ``**R1 ...**``, ``**P1**``
and ``**S1**`` headings and the table rows that begin ``| C1 |`` or ``| E1 |``.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("batchinfer", "stacks", "lambda")

_ID = r"[RCPES]\d{1,2}"
_DASH = r"[-\u2013]"  # a range's hyphen or en dash
_ITEM = rf"(?:{_ID}{_DASH}{_ID}|{_ID})"
_LIST = rf"{_ITEM}(?:\s*(?:,|/|\band\b)\s*{_ITEM})*"
_SPEC_LIST = re.compile(rf"\bspec\s+(?P<list>{_LIST})(?![\w-])")
_PAREN_LIST = re.compile(rf"\((?P<list>{_LIST})\)")
_ITEM_RE = re.compile(rf"(?<![\w-])({_ITEM})(?![\w-])")
# R, C, P and E ids and ranges anywhere (ranges first, so that their ends are not single ids).
_RCPE = re.compile(rf"(?<![\w-])([RCPE]\d{{1,2}}{_DASH}[RCPE]\d{{1,2}}|[RCPE]\d{{1,2}})(?![\w-])")
_WORD = r"[A-Za-z][A-Za-z'\u2019-]*(?!\w)"
_GAP = r"[\s,#]+"
_NAMING = rf"(?::|\s\(|\s\u2014)\s*(?:#\s*)?{_WORD}{_GAP}{_WORD}{_GAP}{_WORD}"


def defined_rules(text: str) -> set[str]:
    """The rule ids docs/platform.md defines."""
    bold = re.findall(r"\*\*([RPS]\d{1,2})\b", text)
    rows = re.findall(r"^\| ([CE]\d{1,2}) \|", text, flags=re.MULTILINE)
    return set(bold) | set(rows)


def cited(text: str) -> set[str]:
    """The ids and ranges ``text`` cites, as written (``R8``, ``R5-R8``)."""
    found = {m.group(1).replace("\u2013", "-") for m in _RCPE.finditer(text)}
    for pattern in (_SPEC_LIST, _PAREN_LIST):
        for m in pattern.finditer(text):
            items = [i.replace("\u2013", "-") for i in _ITEM_RE.findall(m.group("list"))]
            if pattern is _PAREN_LIST and len(items) < 2:
                continue
            found.update(i for i in items if i.startswith("S"))
    return found


def named(text: str, citation: str) -> bool:
    """True when ``citation`` is followed somewhere by a separator and three words."""
    ends = [re.escape(end) for end in citation.split("-")]
    written = _DASH.join(ends)
    return re.search(rf"(?<![\w-]){written}(?![\w-]){_NAMING}", text) is not None


def rule_ends(citation: str) -> list[str]:
    return citation.split("-")


MODULES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))
RULES = defined_rules((ROOT / "docs" / "platform.md").read_text())


def test_the_rules_are_parsed_from_the_platform_page():
    expected = {f"R{n}" for n in range(1, 22)} | {f"C{n}" for n in range(1, 11)}
    expected |= {f"P{n}" for n in (1, 2, 3, 4, 6, 7, 8)} | {f"S{n}" for n in range(1, 7)}
    expected |= {f"E{n}" for n in (1, 2, 3, 4, 5, 6, 8, 9, 10)}
    assert expected == RULES


@pytest.mark.parametrize(
    ("text", "citations"),
    [
        ("data lives in S3 (S3 copies the bytes); AwsSolutions-S1", set()),
        ("the .sync integrations (spec S4, S5) and (R1, S3)", {"S4", "S5", "R1", "S3"}),
        ("records (spec R5-R8), order (R9, R14), R12/R11", {"R5-R8", "R9", "R14", "R12", "R11"}),
    ],
)
def test_citations_are_found_and_s3_the_service_is_not_one(text, citations):
    assert cited(text) == citations


def test_a_bare_id_is_not_named_and_an_id_with_three_words_is():
    assert not named("a record over the limit fails its file (R8).", "R8")
    assert not named("R12/R11: ``a/b.csv`` -> ``a/b.csv.out``", "R12")
    assert named("(R8: a record larger than MaxPayloadInMB fails its file)", "R8")
    assert named("records (spec R5-R8: how a file becomes\n    requests)", "R5-R8")
    assert named("# R19: a failed file gets\n# no output", "R19")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_cited_rule_exists_and_is_named_in_words_in_the_module(path):
    text = path.read_text()
    citations = cited(text)
    unknown = sorted(c for c in citations for end in rule_ends(c) if end not in RULES)
    assert not unknown, f"cites ids that docs/platform.md does not define: {unknown}"
    unnamed = sorted(c for c in citations if not named(text, c))
    assert not unnamed, f"never names these in words (e.g. 'R8: a record larger ...'): {unnamed}"
