"""The unused-grant report: grants of the pipeline's runtimes that no call of any e2e
scenario used, in any environment's template, each either acknowledged with a reason
(:data:`tests.support.permissions.acknowledged.ACKNOWLEDGED`) or a finding.

The scenarios run in several processes; each sends its usage to the session's first
process, which merges and checks it once every e2e scenario has run and passed.
"""

import fnmatch
from collections.abc import Iterable

from tests.support.permissions.acknowledged import ACKNOWLEDGED

Usage = dict[str, list[str]]  # {"granted": [...], "used": [...]} over every environment


def merge(usages: Iterable[tuple[str, dict[str, Iterable[str]]]]) -> Usage:
    """The grants of every environment's template and the ones any scenario used (the
    environments share their policies' names: a grant used with one counts for all)."""
    granted: set[str] = set()
    used: set[str] = set()
    for _, grants in usages:
        granted |= set(grants["granted"])
        used |= set(grants["used"])
    return {"granted": sorted(granted), "used": sorted(used)}


def unused(usage: Usage) -> list[str]:
    """``<policy>[<sid>] <action> on <resource>`` for each grant no call used."""
    return sorted(set(usage["granted"]) - set(usage["used"]))


def findings(usage: Usage) -> list[str]:
    """Unused grants no acknowledgement covers, and acknowledgements that cover none."""
    lines = unused(usage)
    problems = [
        f"unused and not acknowledged: {line}"
        for line in lines
        if not any(fnmatch.fnmatchcase(line, pattern) for pattern in ACKNOWLEDGED)
    ]
    problems += [
        f"acknowledged but used (or gone): {pattern}"
        for pattern in ACKNOWLEDGED
        if not any(fnmatch.fnmatchcase(line, pattern) for line in lines)
    ]
    return problems
