"""``batchinfer example``: the example model and input that the README's demo runs on."""

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console


def example(
    directory: Annotated[Path, typer.Argument(help="Where to write model/ and input/.")],
    rows: Annotated[int, typer.Option(help="Rows of example input to generate.")] = 500_000,
    fmt: Annotated[str, typer.Option("--format", help="csv or jsonl.")] = "csv",
    framework: Annotated[
        str | None,
        typer.Option(
            help="sklearn, xgboost or lightgbm: a model in that framework's format with a "
            "code/inference.py of SageMaker's handler protocol; pytorch or onnx: a network "
            "as model.pt (TorchScript) or model.onnx for the default handler (default: a "
            "scikit-learn model.joblib served by the default handler)."
        ),
    ] = None,
) -> None:
    """Train the example classifier (a dataset shipped with scikit-learn) and write input."""
    from batchinfer.errors import ValidationError
    from batchinfer.examples import (
        EXAMPLE_FRAMEWORKS,
        train_example_model,
        train_framework_model,
        write_example_csv,
        write_example_jsonl,
    )
    from batchinfer.extras import EXTRA_OF

    writers = {"csv": write_example_csv, "jsonl": write_example_jsonl}
    if fmt not in writers:
        raise ValidationError(f"--format must be csv or jsonl, not {fmt!r}")
    if framework is not None and framework not in EXAMPLE_FRAMEWORKS:
        raise ValidationError(
            f"--framework must be {', '.join(EXAMPLE_FRAMEWORKS)}, not {framework!r}"
        )
    console = Console(stderr=True)
    model_dir = directory / "model"
    with console.status(f"training the example {framework or 'scikit-learn'} model"):
        if framework is None:
            train_example_model(model_dir)
        else:
            try:
                written = train_framework_model(model_dir, framework)
            except ModuleNotFoundError as exc:
                if exc.name not in EXTRA_OF:
                    raise
                raise ValidationError(f"--framework {framework}: {exc}") from None
    data = directory / "input" / f"data.{fmt}"
    data.parent.mkdir(parents=True, exist_ok=True)
    with console.status(f"writing {rows:,} rows"):
        writers[fmt](data, rows)
    said = f"model: {model_dir}"
    if framework is not None:
        shown = written.relative_to(model_dir)
        by = f"handler {shown}" if written.suffix == ".py" else f"{shown}, default handler"
        said += f" ({framework}, {by})"
    console.print(f"{said}\ninput: {data} ({data.stat().st_size / 1e6:,.1f} MB)", markup=False)
