"""The JSONPath subset of Batch Transform's InputFilter and OutputFilter (spec R16: the filters take
a small subset of JSONPath).

Supported: ``$``, ``.name``, ``.*`` / ``[*]``, ``['a','b']``, ``[i,j]`` with negative
indexes, ``[s:e]`` with optional bounds and at most one range per bracket (``$[0,5:]`` is
fine, ``$[0:2,5:]`` is rejected). Slices follow Python/JavaScript semantics: the end is
exclusive (the platform does not document it; this is the project's choice).

Evaluation: a name or a single index selects one value; a bracket of several names builds an
object of those keys (``$['id','SageMakerOutput']``); several indexes, a range or ``*`` build
an array, and any segment after them applies to each selected element.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from batchinfer.errors import InputError, ValidationError

SUPPORTED = "$, .name, .*, [*], ['a','b'], [i,j] (negative allowed), [s:e] (one range)"

_NAME = re.compile(r"\.([A-Za-z_][\w-]*)")
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_QUOTED = re.compile(r"""\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*""")
_INDEX = re.compile(r"\s*(-?\d+)\s*")
_SLICE = re.compile(r"\s*(-?\d+)?\s*:\s*(-?\d+)?\s*")


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Names:
    names: tuple[str, ...]


@dataclass(frozen=True)
class Wildcard:
    pass


@dataclass(frozen=True)
class Indexes:
    """Indexes and at most one slice, in the order written."""

    items: tuple[int | slice, ...]


Segment = Name | Names | Wildcard | Indexes


@dataclass(frozen=True)
class JsonPath:
    expression: str
    segments: tuple[Segment, ...]
    _select: "Selector" = field(init=False, repr=False, compare=False)
    # What selects the value the first ``*`` spreads, or None without one.
    _spread: "Selector | None" = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_select", _compile(self.expression, self.segments))
        first = next((i for i, s in enumerate(self.segments) if isinstance(s, Wildcard)), None)
        spread = None if first is None else _compile(self.expression, self.segments[:first])
        object.__setattr__(self, "_spread", spread)

    @property
    def is_root(self) -> bool:
        """True for ``$``: the filter selects everything and changes nothing."""
        return not self.segments

    @property
    def uses_names(self) -> bool:
        """True when a segment selects object keys (not applicable to CSV rows)."""
        return any(isinstance(s, Name | Names) for s in self.segments)

    def spread_keys(self, value: Any) -> tuple[str, ...] | None:
        """The keys, in order, of the object the first ``*`` spreads into its values (their
        order is the keys' order), or None when no ``*`` meets an object. ``value`` is one
        the filter already applied to."""
        if self._spread is None:
            return None
        spread = self._spread(value)
        return tuple(spread) if isinstance(spread, dict) else None

    def apply(self, value: Any) -> Any:
        """Select from a parsed JSON value or a CSV row (a list of strings).

        Raises InputError naming the expression when the value has no such key or index.
        """
        return self._select(value)


def parse(expression: str, *, field: str = "filter") -> JsonPath:
    """Parse ``expression``; a ValidationError names ``field`` and the expression."""

    def fail(detail: str) -> ValidationError:
        return ValidationError(
            f"{field}: {expression!r} is not a supported JSONPath ({detail}); "
            f"supported: {SUPPORTED}"
        )

    if not isinstance(expression, str):
        raise ValidationError(f"{field}: {expression!r} is not a string")
    if not expression.startswith("$"):
        raise fail("it must start with $")
    segments: list[Segment] = []
    pos = 1
    while pos < len(expression):
        rest = expression[pos:]
        if rest.startswith(".*"):
            segments.append(Wildcard())
            pos += 2
        elif match := _NAME.match(expression, pos):
            segments.append(Name(match.group(1)))
            pos = match.end()
        elif match := _BRACKET.match(expression, pos):
            segments.append(_parse_bracket(match.group(1), fail))
            pos = match.end()
        else:
            raise fail(f"unexpected {rest[:10]!r} at position {pos}")
    return JsonPath(expression, tuple(segments))


def _parse_bracket(inner: str, fail: Any) -> Segment:
    if inner.strip() == "*":
        return Wildcard()
    items = _split_items(inner)
    if not items or any(not item.strip() for item in items):
        raise fail(f"empty item in [{inner}]")
    quoted = [m for item in items if (m := _QUOTED.fullmatch(item))]
    if len(quoted) == len(items):
        names = tuple(
            _unescape(m.group(1) if m.group(1) is not None else m.group(2)) for m in quoted
        )
        return Name(names[0]) if len(names) == 1 else Names(names)
    parsed: list[int | slice] = []
    for item in items:
        if match := _INDEX.fullmatch(item):
            parsed.append(int(match.group(1)))
        elif match := _SLICE.fullmatch(item):
            start, end = (None if g is None else int(g) for g in match.groups())
            parsed.append(slice(start, end))
        else:
            raise fail(f"{item.strip()!r} is neither a quoted name, an index nor a range s:e")
    if sum(isinstance(p, slice) for p in parsed) > 1:
        raise fail("only one range is allowed in a bracket")
    return Indexes(tuple(parsed))


def _split_items(inner: str) -> list[str]:
    """Split a bracket's content at commas outside quotes."""
    items: list[str] = []
    current: list[str] = []
    quote, escaped = "", False
    for char in inner:
        if escaped:
            escaped = False
        elif quote and char == "\\":
            escaped = True
        elif char in "'\"" and (not quote or quote == char):
            quote = "" if quote else char
        elif char == "," and not quote:
            items.append("".join(current))
            current = []
            continue
        current.append(char)
    items.append("".join(current))
    return items


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


Selector = Callable[[Any], Any]


def _compile(expression: str, segments: tuple[Segment, ...]) -> Selector:
    """One function per segment, chained from the last: no dispatch per value at run time."""

    def fail(detail: str) -> InputError:
        return InputError(f"filter {expression!r}: {detail}")

    select: Selector | None = None
    for segment in reversed(segments):
        select = _compile_segment(segment, select, fail)
    return select or (lambda value: value)


def _compile_segment(segment: Segment, then: Selector | None, fail: Any) -> Selector:
    def each(values: list[Any]) -> list[Any]:
        return values[:] if then is None else [then(v) for v in values]

    match segment:
        case Name(name):

            def select(value: Any) -> Any:
                if not isinstance(value, dict):
                    raise fail(f"cannot select key {name!r} from {_kind(value)}")
                if name not in value:
                    raise fail(f"no key {name!r}")
                return value[name] if then is None else then(value[name])

        case Names(names):

            def select(value: Any) -> Any:
                if not isinstance(value, dict):
                    raise fail(f"cannot select keys {list(names)} from {_kind(value)}")
                for n in names:
                    if n not in value:
                        raise fail(f"no key {n!r}")
                return {n: value[n] if then is None else then(value[n]) for n in names}

        case Wildcard():

            def select(value: Any) -> Any:
                if isinstance(value, dict):
                    return each(list(value.values()))
                if isinstance(value, list):
                    return each(value)
                raise fail(f"cannot apply * to {_kind(value)}")

        case Indexes(items):
            indexes = [i for i in items if isinstance(i, int)]
            lowest, highest = min(indexes, default=0), max(indexes, default=-1)
            single = items[0] if len(items) == 1 and isinstance(items[0], int) else None

            def select(value: Any) -> Any:
                if not isinstance(value, list):
                    raise fail(f"cannot index {_kind(value)}")
                size = len(value)
                if indexes and not (-size <= lowest and highest < size):
                    bad = next(i for i in indexes if not -size <= i < size)
                    raise fail(f"index {bad} is out of range for an array of {size}")
                if single is not None:
                    return value[single] if then is None else then(value[single])
                if len(items) == 1:
                    return each(value[items[0]])
                selected: list[Any] = []
                for item in items:
                    selected.extend(value[item] if isinstance(item, slice) else [value[item]])
                return each(selected)

        case _:
            raise AssertionError(segment)
    return select


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"an array of {len(value)}"
    return f"the value {value!r}"
