"""The transform options are declared once (batchinfer.commands.transform_options) from the
settings schema, and every command that takes them has the same set."""

import typer.main

from batchinfer.cli import app
from batchinfer.commands.transform_options import PANEL, option_name
from batchinfer.transform.settings import PASCAL


def _transform_options(command_name: str) -> set[str]:
    command = typer.main.get_command(app).commands[command_name]
    return {
        opt
        for param in command.params
        if getattr(param, "rich_help_panel", None) == PANEL
        for opt in param.opts
    }


def test_run_and_submit_take_the_same_transform_options_one_per_setting():
    expected = {option_name(key) for key in PASCAL}
    assert "--max-payload-mb" in expected and "--env" in expected
    assert _transform_options("run") == expected
    assert _transform_options("submit") == expected
