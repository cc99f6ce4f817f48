"""A model artifact as SageMaker hands it to a container: a directory or a model.tar.gz (C2: the
model artifact is extracted into /opt/ml/model)."""

import tarfile
from pathlib import Path

from batchinfer.errors import InputError


def prepare_model_dir(model: Path, workdir: Path) -> Path:
    """Return a directory holding the model: ``model`` itself, or ``model.tar.gz`` extracted.

    A directory that holds only a ``model.tar.gz`` (a Processing job's model input) is
    extracted too.
    """
    if model.is_dir():
        archives = [p for p in model.iterdir() if p.name.endswith((".tar.gz", ".tgz"))]
        if len(archives) == 1 and len(list(model.iterdir())) == 1:
            return prepare_model_dir(archives[0], workdir)
        return model
    if not model.is_file():
        raise InputError(f"model {model}: no such file or directory")
    target = workdir / "model"
    target.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(model, "r:*") as archive:
            archive.extractall(target, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise InputError(f"model {model}: not a readable tar.gz archive: {exc}") from exc
    return target
