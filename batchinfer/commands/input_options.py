"""The options that pick a job's inputs and records, declared once: ``--include`` and
``--exclude`` globs (``run``, ``plan``, ``submit``), and ``--skip-blank-lines`` (``run``,
``plan``: in the cloud SageMaker frames the records)."""

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
SkipBlankLines = Annotated[
    bool,
    typer.Option(
        help="Drop empty lines before batching; they are not records (split type Line).",
        rich_help_panel=PANEL,
    ),
]


def selection(include: list[str] | None, exclude: list[str] | None) -> InputSelection:
    """The inputs ``--include`` and ``--exclude`` select."""
    return InputSelection(tuple(include or ()), tuple(exclude or ()))
