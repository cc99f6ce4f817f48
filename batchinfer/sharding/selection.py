"""Which files below an input are inputs, one rule for local directories, S3 prefixes and
the S3 trigger (spec R4: a key prefix or a ManifestFile selects the input objects).

Files that tools leave beside their data are not inputs: a hidden or ``_``-prefixed file
(``_SUCCESS``, ``_committed_*``, the ``.part-00000.csv.crc`` of a Spark or Hadoop output
folder), or any file below a hidden or ``_``-prefixed folder (``_temporary/``). What the user
named is always an input: a file given as such, a ManifestFile's or a request's ``names``,
and the part of an S3 prefix after its last ``/``. Then ``include`` globs narrow the inputs
and ``exclude`` globs remove some; both match the name relative to the input (the output's
name without ``.out``, R12: each input object gives one output named after it, such as
``day1/a.csv``) with :func:`fnmatch.fnmatchcase`, where ``*`` also matches ``/``.

Standard library only: the Plan and arrivals Lambdas load it.
"""

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

STRAY_STARTS = (".", "_")
NAMES_SHOWN = 3


def is_stray(name: str, named: int = 0) -> bool:
    """Whether ``name`` (relative, ``/``-separated) is or lies below a hidden or
    ``_``-prefixed file or folder, judging only the parts that start after its first
    ``named`` characters (those the user named)."""
    start = 0
    for part in name.split("/"):
        if start >= named and part.startswith(STRAY_STARTS):
            return True
        start += len(part) + 1
    return False


def under_prefix(prefix: str, key: str) -> tuple[str, int]:
    """``key`` named relative to the folder of the S3 ``prefix`` (as its output is named),
    and how many characters of that name the prefix names: ``in/d`` and ``in/day1/a.csv``
    give ``("day1/a.csv", 1)``."""
    base = prefix[: prefix.rfind("/") + 1]
    return key[len(base) :], len(prefix) - len(base)


@dataclass(frozen=True)
class InputSelection:
    """The ``include`` and ``exclude`` globs of a job; none: every input."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def matches(self, name: str) -> bool:
        """Whether the relative ``name`` matches an ``include`` glob (when there are any)
        and no ``exclude`` glob."""
        included = not self.include or any(fnmatchcase(name, p) for p in self.include)
        return included and not any(fnmatchcase(name, p) for p in self.exclude)

    def __str__(self) -> str:
        """``include '*.csv', exclude 'day2/*'``: the globs, as errors name them."""
        return ", ".join(
            f"{key} {pattern!r}"
            for key, patterns in (("include", self.include), ("exclude", self.exclude))
            for pattern in patterns
        )


EVERY_INPUT = InputSelection()


class Selector:
    """Tells which names are inputs (:meth:`takes`), and remembers those it left out to
    say why when no input is left (:meth:`left_out`). ``noun`` is what an input is called
    there: file, object."""

    def __init__(self, selection: InputSelection, noun: str) -> None:
        self.selection, self.noun = selection, noun
        self._strays = _LeftOut()
        self._unmatched = _LeftOut()

    def takes(self, name: str, named: int = 0) -> bool:
        """Whether the input called ``name`` (relative to its directory or prefix) is one
        the job reads; ``named``: how many of its characters the user named."""
        if is_stray(name, named):
            self._strays.add(name)
            return False
        if not self.selection.matches(name):
            self._unmatched.add(name)
            return False
        return True

    def left_out(self) -> str:
        """Why inputs were left out (``: 2 files (_SUCCESS, .a.crc) hidden or ...``), or ""
        when none was."""
        reasons = []
        if self._unmatched.count:
            reasons.append(f"{self._unmatched.told(self.noun)} not selected by {self.selection}")
        if self._strays.count:
            reasons.append(
                f"{self._strays.told(self.noun)} hidden or _-prefixed, which are inputs only "
                "when named"
            )
        return ": " + "; ".join(reasons) if reasons else ""


@dataclass
class _LeftOut:
    """How many names were left out for one reason, and the first few of them."""

    count: int = 0
    shown: list[str] = field(default_factory=list)

    def add(self, name: str) -> None:
        self.count += 1
        if len(self.shown) < NAMES_SHOWN:
            self.shown.append(name)

    def told(self, noun: str) -> str:
        """``2 files (_SUCCESS, .a.crc)``."""
        more = ", ..." if self.count > len(self.shown) else ""
        plural = "" if self.count == 1 else "s"
        return f"{self.count} {noun}{plural} ({', '.join(self.shown)}{more})"
