"""The Typer app every ``batchinfer`` entry point runs: errors of the project are one line."""

from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from batchinfer.errors import BatchInferError


class CommandApp(typer.Typer):
    """A Typer app that turns :class:`BatchInferError` into a message and its exit code."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(add_completion=False, pretty_exceptions_enable=False, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except BatchInferError as exc:
            Console(stderr=True, soft_wrap=True).print(
                f"[bold red]error:[/] {escape(str(exc))}", highlight=False
            )
            raise SystemExit(exc.exit_code) from None
