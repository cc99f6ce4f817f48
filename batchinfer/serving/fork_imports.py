"""Imports a model's workers share: made once in the process they are forked from (the model
server's master, a processing instance's forkserver) instead of once in every worker.

Importing a model's library is most of a worker's start: scikit-learn takes about 0.9 s of
CPU (SciPy's statistics module builds its docstrings as it loads), and every worker paid it,
W times a server of W workers on cores the others were starting on too. Forked after the
import, each worker finds the library loaded and only reads its model file, and the
library's memory is shared by them all. With one worker there is nothing to share (and the
master would hold a copy of its own), so the import is left to the worker.

Only the library the default loader imports for the model file (scikit-learn for
``*.joblib``/``*.pkl``, XGBoost, LightGBM) is imported early, and only for a model with no
user module and no ``code/requirements.txt``: a user module's imports are its own to make
(SageMaker runs it in each worker), and a requirements file may install another version of
the library than the one this process would find. PyTorch and ONNX Runtime are left to each
worker, which may be pinned to its own GPU as it starts. An import that fails here is not
reported here: the worker's own load fails the same way and says why.
"""

import importlib
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from batchinfer.model_artifact import MODEL_FILE_KINDS, default_model_file
from batchinfer.serving.model_requirements import REQUIREMENTS
from batchinfer.serving.readable import find_user_module
from batchinfer.serving.server_errors import ModelLoadError

LOG = logging.getLogger(__name__)
LIBRARY_OF_KIND = {"scikit-learn": "sklearn", "XGBoost": "xgboost", "LightGBM": "lightgbm"}


def shared_libraries(model_dir: Path, env: Mapping[str, str], workers: int) -> tuple[str, ...]:
    """The model library to import before ``workers`` workers of ``model_dir`` fork (see
    above), ``env`` being what they load the model with: none for one worker, for a model
    with a user module or requirements, or whose model file (the one the default loader
    picks) is of no kind named in :data:`LIBRARY_OF_KIND`."""
    if workers < 2:
        return ()
    try:
        if find_user_module(model_dir, env) or (model_dir / REQUIREMENTS).exists():
            return ()
        model_file = default_model_file(model_dir)
    except (ModelLoadError, OSError):
        return ()  # the workers' own load says what is wrong
    library = model_file and LIBRARY_OF_KIND.get(MODEL_FILE_KINDS[model_file.suffix])
    return (library,) if library else ()


def import_libraries(modules: Iterable[str]) -> None:
    """Import ``modules`` (named by :func:`shared_libraries`) in the process the workers fork
    from; one that fails to import is left to the workers."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # any failure: each worker's load reports it
            LOG.debug("%s not imported before the workers fork: %s", module, exc)
