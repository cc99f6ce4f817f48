"""Fixtures for model server tests: the example model and real gunicorn servers on localhost."""

import shutil
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import joblib
import numpy as np
import pytest

from batchinfer.examples import train_example_model
from batchinfer.serving.launcher import ServerProcess, start_server
from tests.integration.serving.helpers import START_TIMEOUT, Client, csv_body


@pytest.fixture(scope="session")
def example_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example model (100-tree gradient boosting on scikit-learn's diabetes data)."""
    model_dir = tmp_path_factory.mktemp("example-model")
    train_example_model(model_dir)
    return model_dir


@pytest.fixture(scope="session")
def example_model(example_model_dir: Path) -> object:
    return joblib.load(example_model_dir / "model.joblib")


@pytest.fixture(scope="session")
def example_rows() -> np.ndarray:
    """Twelve rows of the example data set's 10 features (original units)."""
    from sklearn.datasets import load_diabetes

    return load_diabetes(return_X_y=True, scaled=False)[0][:12]


@pytest.fixture
def csv_of() -> Callable[[np.ndarray], bytes]:
    return csv_body


@pytest.fixture(scope="session")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Client]]:
    """Start a healthy server for a model directory (stopped at the end of the session)."""
    servers: list[ServerProcess] = []

    def start(model_dir: Path, *, workers: int = 1, env: Mapping[str, str] | None = None) -> Client:
        server = start_server(model_dir, workers=workers, env=env)
        servers.append(server)
        server.wait_healthy(START_TIMEOUT)
        return Client(server.port)

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def example_server(serve: Callable[..., Client], example_model_dir: Path) -> Client:
    """The example model behind 2 workers, SAGEMAKER_MAX_PAYLOAD_IN_MB=1."""
    return serve(example_model_dir, workers=2, env={"SAGEMAKER_MAX_PAYLOAD_IN_MB": "1"})


def write_module(model_dir: Path, source: str, *, folder: str = "code") -> Path:
    """Write a user module (dedented) as ``model_dir/<folder>/inference.py``."""
    path = model_dir / folder / "inference.py" if folder else model_dir / "inference.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


@pytest.fixture
def model_dir(tmp_path: Path, example_model_dir: Path) -> Path:
    """A copy of the example model as model.joblib, in a folder of the test's own, for a
    user module to go beside it."""
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(example_model_dir / "model.joblib", folder / "model.joblib")
    return folder


@pytest.fixture
def user_module() -> Callable[..., Path]:
    return write_module
