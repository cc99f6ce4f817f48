"""The Typer app every ``batchinfer`` entry point runs: errors of the project are one line,
and help texts are shown as written."""

from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from batchinfer.errors import BatchInferError


def _as_written(command: TyperCommand | TyperGroup) -> None:
    """Help texts of ``command`` and its parameters read as written, not as rich markup
    (``batchinfer[plot]`` keeps its brackets); a plain flag shows no value type: it takes
    none."""
    for name in ("help", "short_help", "epilog"):
        if text := getattr(command, name):
            setattr(command, name, escape(text))
    for param in command.params:
        if isinstance(param, TyperOption | TyperArgument) and param.help:
            param.help = escape(param.help)
        _no_value_type(param)


def _no_value_type(param: object) -> None:
    if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
        param.metavar = ""


class Command(TyperCommand):
    """A sub-command whose help is shown as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _as_written(self)

    def get_help_option(self, ctx: Any) -> TyperOption | None:
        option = super().get_help_option(ctx)
        _no_value_type(option)
        return option


class Group(TyperGroup):
    """The ``batchinfer`` command, whose help is shown as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _as_written(self)

    def get_help_option(self, ctx: Any) -> TyperOption | None:
        option = super().get_help_option(ctx)
        _no_value_type(option)
        return option


class CommandApp(typer.Typer):
    """A Typer app that turns :class:`BatchInferError` into a message and its exit code;
    its commands show their help as written."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(add_completion=False, pretty_exceptions_enable=False, cls=Group, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        return super().command(*args, cls=kwargs.pop("cls", Command), **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except BatchInferError as exc:
            Console(stderr=True, soft_wrap=True).print(
                f"[bold red]error:[/] {escape(str(exc))}", highlight=False
            )
            raise SystemExit(exc.exit_code) from None


def run_alone(command: Callable[..., Any], name: str) -> None:
    """Run ``command`` as a program of its own (``python -m batchinfer.commands.<module>``),
    without importing the other commands, so that what a local engine starts (a model
    server, a processing instance) starts sooner."""
    app = CommandApp(name=name)
    app.command()(command)
    app()
