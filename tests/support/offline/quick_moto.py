"""moto's Step Functions interpreter made quicker for the offline stack, with nothing it does
changed but how long it takes: definitions parsed once per test process, and Retry intervals
waited out a tenth as long (internals of moto 5.2.5, pinned in requirements-dev.txt, as the
corrections of ``moto_fixes`` are).

moto parses a definition with its ANTLR grammar when the state machine is created and again
for every execution it starts, and the offline stack's scenarios each create the same
synthesized definition and start several executions of it: most of an e2e scenario's time
was that parse. Here the parse tree of each definition text is kept and reused; every
parse still builds its program afresh from the tree (moto's preprocessor), so no execution
shares a component with another.

moto sleeps out a Retry's interval for real; the e2e templates' intervals are already the
least a definition may set (1 s), and a scenario that injects failures spends most of its
time in them. Every scenario counts what ran (jobs, records, announcements), never when,
so here each interval lasts a tenth of what the definition says."""

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

_TREES: dict[str, Any] = {}
RETRY_WAIT_SHARE = 0.1


class _ShorterRetryWaits:
    """The ``time`` module as moto's retrier sees it: its sleeps ``RETRY_WAIT_SHARE`` as long."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds * RETRY_WAIT_SHARE)


def _kept(parse: Callable[[str], tuple[Any, Any]]) -> Callable[[str], tuple[Any, Any]]:
    """moto's ``parse`` keeping the tree of each definition it parsed (one that fails raises
    as moto raises, and is not kept); a definition parsed before gets a program built afresh
    from its tree."""

    def parse_kept(definition: str) -> tuple[Any, Any]:
        tree = _TREES.get(definition)
        if tree is not None:
            return Preprocessor().visit(tree), tree
        program, tree = parse(definition)
        _TREES[definition] = tree
        return program, tree

    return parse_kept


@contextmanager
def quick_moto() -> Iterator[None]:
    """moto's ``AmazonStateLanguageParser.parse`` reusing the parse tree of a definition it
    has parsed before (enter it before anything that wraps the parse), and Retry intervals
    ``RETRY_WAIT_SHARE`` as long."""
    with (
        mock.patch.object(
            AmazonStateLanguageParser,
            "parse",
            staticmethod(_kept(AmazonStateLanguageParser.parse)),
        ),
        mock.patch.object(retrier_decl, "time", _ShorterRetryWaits()),
    ):
        yield
