"""``batchinfer example``: the example model and input that the README's demo runs on."""

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console


def example(
    directory: Annotated[Path, typer.Argument(help="Where to write model/ and input/.")],
    rows: Annotated[int, typer.Option(help="Rows of example input to generate.")] = 500_000,
    fmt: Annotated[str, typer.Option("--format", help="csv or jsonl.")] = "csv",
) -> None:
    """Train the example classifier (a dataset shipped with scikit-learn) and write input."""
    from batchinfer.errors import ValidationError
    from batchinfer.examples import train_example_model, write_example_csv, write_example_jsonl

    writers = {"csv": write_example_csv, "jsonl": write_example_jsonl}
    if fmt not in writers:
        raise ValidationError(f"--format must be csv or jsonl, not {fmt!r}")
    console = Console(stderr=True)
    model_dir = directory / "model"
    with console.status("training the example model"):
        train_example_model(model_dir)
    data = directory / "input" / f"data.{fmt}"
    data.parent.mkdir(parents=True, exist_ok=True)
    with console.status(f"writing {rows:,} rows"):
        writers[fmt](data, rows)
    console.print(
        f"model: {model_dir}\ninput: {data} ({data.stat().st_size / 1e6:,.1f} MB)", markup=False
    )
