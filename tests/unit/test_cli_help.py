"""Every command's ``--help``: real examples that parse as the command reads them, plain
flags shown without a value type, and help texts shown as written (brackets kept)."""

import shlex
from typing import Annotated

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from batchinfer.cli import app
from batchinfer.commands.help_examples import EXAMPLES
from batchinfer.commands.typer_app import CommandApp

COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def _help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return result.output


def _examples(shown: str) -> list[list[str]]:
    """The command lines under ``Examples:`` in a help text, as argv lists."""
    lines = [line.strip() for line in shown.split("Examples:", 1)[1].splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("batchinfer ")]


def test_every_command_has_examples_and_every_example_a_command():
    assert set(EXAMPLES) == set(COMMANDS)
    assert {"run", "plan", "example", "submit"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_each_help_shows_examples_of_the_command_that_parse(name):
    shown = _help(name)
    examples = _examples(shown)
    assert examples and all(argv[1] == name for argv in examples), shown
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    for argv in examples:
        # Parsing checks every option's name and value (types, required ones) and runs nothing.
        context = command.make_context(name, argv[2:])
        assert not context.args, argv


@pytest.mark.parametrize("name", COMMANDS)
def test_plain_flags_show_no_value_type(name):
    rows = [line for line in _help(name).splitlines() if "--help " in line or "--json " in line]
    assert rows and not [row for row in rows if "<bool>" in row]
    assert "<bool>" not in _help(name)


def test_the_top_level_help_shows_no_bool_either():
    shown = _help()
    assert "--version" in shown and "<bool>" not in shown


def test_help_texts_keep_their_brackets():
    demo = CommandApp()

    @demo.command("draw", epilog="then: pip install 'batchinfer[plot]'")
    def draw(
        plot: Annotated[
            str, typer.Option(help="needs matplotlib: pip install 'batchinfer[plot]'")
        ] = "",
    ) -> None:
        """Draw it ([bold] is text here)."""

    @demo.command("other")
    def other() -> None:
        """Nothing."""

    result = CliRunner().invoke(demo, ["draw", "--help"], env={"COLUMNS": "200"})
    assert result.output.count("batchinfer[plot]") == 2, result.output
    assert "([bold] is text here)" in result.output
    listed = CliRunner().invoke(demo, ["--help"], env={"COLUMNS": "200"}).output
    assert "Draw it ([bold] is text here)." in listed
