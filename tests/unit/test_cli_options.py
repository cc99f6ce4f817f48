"""The transform options are declared once (batchinfer.commands.transform_options) from the
settings schema, and every command that takes them has the same set."""

from typing import Annotated, Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from batchinfer.cli import app
from batchinfer.commands.transform_options import PANEL, option_name, transform_options
from batchinfer.transform.settings import PASCAL, TransformSettings

EXPECTED = {option_name(key) for key in PASCAL}


def _transform_options(command: Any) -> set[str]:
    return {
        opt
        for param in command.params
        if getattr(param, "rich_help_panel", None) == PANEL
        for opt in param.opts
    }


def test_run_submit_and_plan_take_the_same_transform_options_one_per_setting():
    assert "--max-payload-mb" in EXPECTED and "--env" in EXPECTED
    assert set(PASCAL) == TransformSettings.request_keys()  # the schema: keys and fields
    commands = typer.main.get_command(app).commands
    assert _transform_options(commands["run"]) == EXPECTED
    assert _transform_options(commands["submit"]) == EXPECTED
    assert _transform_options(commands["plan"]) == EXPECTED


def test_a_new_command_takes_them_with_one_decorator_and_gets_only_those_given():
    received: list[dict[str, Any]] = []
    plan = typer.Typer()

    @plan.command()
    @transform_options
    def main(name: Annotated[str, typer.Argument()], *, transform: dict[str, Any]) -> None:
        received.append({"name": name, **transform})

    assert _transform_options(typer.main.get_command(plan)) == EXPECTED
    args = ["x", "--max-payload-mb", "8", "--split-type", "Line", "--env", "A=1", "--env", "B=2"]
    result = CliRunner().invoke(plan, args)
    assert result.exit_code == 0, result.output
    assert received == [
        {
            "name": "x",
            "max_payload_mb": 8,
            "split_type": "Line",
            "environment": {"A": "1", "B": "2"},
        }
    ]
    assert CliRunner().invoke(plan, ["y"]).exit_code == 0
    assert received[-1] == {"name": "y"}


def test_a_command_without_the_transform_parameter_is_refused_when_declared():
    def plan(name: str) -> None:
        """Takes no ``transform``."""

    with pytest.raises(TypeError, match="transform"):
        transform_options(plan)
