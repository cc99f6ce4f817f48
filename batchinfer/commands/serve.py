"""``batchinfer serve``: the model server of SageMaker's inference container contract (C1-C10: what
SageMaker expects of an inference container)."""

import os
from pathlib import Path
from typing import Annotated

import typer

from batchinfer.serving.server import (
    DEFAULT_MODEL_DIR,
    DEFAULT_PORT,
    default_workers,
    run_server,
    settings_from_env,
)
from batchinfer.transform.server_limits import WORKERS_VAR


def serve(
    model_dir: Annotated[
        Path,
        typer.Option(help="Directory holding the model (and optionally code/inference.py)."),
    ] = DEFAULT_MODEL_DIR,
    port: Annotated[
        int,
        typer.Option(envvar="SAGEMAKER_BIND_TO_PORT", help="TCP port; 0 picks a free one."),
    ] = DEFAULT_PORT,
    workers: Annotated[
        int | None,
        typer.Option(
            envvar=WORKERS_VAR,
            help="Worker processes, each serving one request at a time (default: one per GPU, "
            "each pinned to it, else one per core).",
            show_default=False,
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "0.0.0.0",
) -> None:
    """Serve the model: GET /ping, POST /invocations, GET /execution-parameters."""
    workers = default_workers(os.environ) if workers is None else workers
    run_server(settings_from_env(model_dir, host, port, workers, os.environ))


if __name__ == "__main__":
    # ``python -m batchinfer.commands.serve``: this command alone, without importing the
    # others (boto3, pyarrow, rich's live display), so a local engine's server starts sooner.
    from batchinfer.commands.typer_app import run_alone

    run_alone(serve, "batchinfer serve")
