"""The ``batchinfer`` command line: one sub-command per module under ``batchinfer.commands``."""

from importlib import metadata
from typing import Annotated

import typer

from batchinfer.commands.typer_app import CommandApp

app = CommandApp(
    name="batchinfer",
    help="Batch inference with SageMaker Batch Transform semantics, locally or on AWS.",
    no_args_is_help=True,
)


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"batchinfer {metadata.version('batchinfer')}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Batch inference with SageMaker Batch Transform semantics, locally or on AWS."""


from batchinfer.commands import example, plan, process, run, serve, split  # noqa: E402
from batchinfer.commands.help_examples import epilog  # noqa: E402

app.command("run", epilog=epilog("run"))(run.run)
app.command("plan", epilog=epilog("plan"))(plan.plan)
app.command("process", epilog=epilog("process"))(process.process)
app.command("example", epilog=epilog("example"))(example.example)
app.command("split", epilog=epilog("split"))(split.split)
app.command("serve", epilog=epilog("serve"))(serve.serve)
from batchinfer.commands import cloud  # noqa: E402

app.command("submit", epilog=epilog("submit"))(cloud.submit)
app.command("status", epilog=epilog("status"))(cloud.status)
app.command("runs", epilog=epilog("runs"))(cloud.runs)
