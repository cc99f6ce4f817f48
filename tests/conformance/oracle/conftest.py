"""Fixtures of the oracle suite: the models both sides serve, and the two runners."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.oracle.outputs import BatchinferRun
from tests.support.cli import run_cli
from tests.support.models import BRACKETS, ECHO, write_model, write_row_sum_model

# Settings by batchinfer's name -> the `batchinfer run` option.
OPTIONS = {
    "content_type": "--content-type",
    "accept": "--accept",
    "split_type": "--split-type",
    "batch_strategy": "--batch-strategy",
    "max_payload_mb": "--max-payload-mb",
    "assemble_with": "--assemble-with",
    "compression_type": "--compression-type",
    "input_filter": "--input-filter",
    "output_filter": "--output-filter",
    "join_source": "--join-source",
}


@pytest.fixture(scope="session")
def row_sum_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_row_sum_model(tmp_path_factory.mktemp("row-sum-model"))


@pytest.fixture(scope="session")
def echo_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_model(tmp_path_factory.mktemp("echo-model"), ECHO)


@pytest.fixture(scope="session")
def brackets_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_model(tmp_path_factory.mktemp("brackets-model"), BRACKETS)


@pytest.fixture
def batchinfer_run(capsys: pytest.CaptureFixture[str]) -> Callable[..., BatchinferRun]:
    """``batchinfer run INPUT --model MODEL --output OUTPUT`` with the settings as options."""

    def run(model_dir: Path, data: Path, output: Path, **settings: Any) -> BatchinferRun:
        options = [item for k, v in settings.items() for item in (OPTIONS[k], str(v))]
        code, said = run_cli(
            capsys,
            "run",
            str(data),
            "--model",
            str(model_dir),
            "--output",
            str(output),
            "--quiet",
            *options,
        )
        manifest = json.loads((output / "_manifest.json").read_text())
        return BatchinferRun(code, said, manifest)

    return run
