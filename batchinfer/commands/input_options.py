"""The options that pick a job's inputs, declared once for ``run``, ``plan`` and
``submit``: ``--include`` and ``--exclude`` globs."""

from typing import Annotated

import typer

from batchinfer.sharding.selection import InputSelection

PANEL = "Inputs"

Include = Annotated[
    list[str] | None,
    typer.Option(
        help="Take only inputs whose name relative to the input (day1/a.csv) matches this "
        "glob; '*' also matches '/' (repeatable).",
        rich_help_panel=PANEL,
        show_default=False,
    ),
]
Exclude = Annotated[
    list[str] | None,
    typer.Option(
        help="Leave out inputs whose relative name matches this glob (repeatable).",
        rich_help_panel=PANEL,
        show_default=False,
    ),
]


def selection(include: list[str] | None, exclude: list[str] | None) -> InputSelection:
    """The inputs ``--include`` and ``--exclude`` select."""
    return InputSelection(tuple(include or ()), tuple(exclude or ()))
