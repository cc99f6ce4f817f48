"""A model artifact as SageMaker hands it to a container: a directory or a model.tar.gz (C2: the
model artifact is extracted into /opt/ml/model); locally also a single model file."""

import os
import shutil
import tarfile
from pathlib import Path

from batchinfer.errors import InputError

# The model files the default model_fn loads, by suffix, and the framework that reads each
# (batchinfer.serving.models.LOADERS holds the loaders).
MODEL_FILE_KINDS = {
    ".joblib": "scikit-learn",
    ".pkl": "scikit-learn",
    ".json": "XGBoost",
    ".ubj": "XGBoost",
    ".txt": "LightGBM",
    ".pt": "TorchScript",
    ".pth": "TorchScript",
    ".onnx": "ONNX",
}


def model_file_kinds() -> str:
    """The model files the default model_fn loads, in words: ``*.joblib / *.pkl
    (scikit-learn), ...``."""
    by_kind: dict[str, list[str]] = {}
    for suffix, kind in MODEL_FILE_KINDS.items():
        by_kind.setdefault(kind, []).append(f"*{suffix}")
    return ", ".join(f"{' / '.join(suffixes)} ({kind})" for kind, suffixes in by_kind.items())


def model_files(model_dir: Path) -> list[Path]:
    """The files of ``model_dir`` the default model_fn could load, by name."""
    return sorted(p for p in model_dir.iterdir() if p.is_file() and p.suffix in MODEL_FILE_KINDS)


def default_model_file(model_dir: Path) -> Path | None:
    """The model file the default model_fn loads from ``model_dir``: ``model.<ext>`` first
    (in the order of :data:`MODEL_FILE_KINDS`), else its only model file; None when it holds
    none, or several and no ``model.<ext>``."""
    for suffix in MODEL_FILE_KINDS:
        preferred = model_dir / f"model{suffix}"
        if preferred.is_file():
            return preferred
    candidates = model_files(model_dir)
    return candidates[0] if len(candidates) == 1 else None


def prepare_model_dir(model: Path, workdir: Path) -> Path:
    """Return a directory holding the model: ``model`` itself, ``model.tar.gz`` extracted, or a
    single model file (``model.joblib``, ...) placed alone in a directory under ``workdir``.

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
    if model.suffix in MODEL_FILE_KINDS:
        _place(model, target / model.name)
        return target
    try:
        with tarfile.open(model, "r:*") as archive:
            archive.extractall(target, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise InputError(
            f"model {model}: neither a readable tar.gz archive ({exc}) nor a model file the "
            f"default handler loads ({model_file_kinds()})"
        ) from exc
    return target


def _place(source: Path, destination: Path) -> None:
    """Hard-link ``source`` at ``destination`` (no copy of a large model), copying it where a
    link cannot be made (another file system)."""
    try:
        os.link(source, destination)
    except OSError:
        shutil.copyfile(source, destination)
