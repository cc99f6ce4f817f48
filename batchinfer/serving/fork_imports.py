"""Imports a model's workers share: made once in the process they are forked from (the model
server's master, a processing instance's forkserver) instead of once in every worker.

Importing a model's library is most of a worker's start: scikit-learn takes about 0.9 s of
CPU (SciPy's statistics module builds its docstrings as it loads), and every worker paid it,
W times a server of W workers on cores the others were starting on too. Forked after the
import, each worker finds the library loaded and only reads its model file, and the
library's memory is shared by them all. With one worker there is nothing to share (and the
master would hold a copy of its own), so the import is left to the worker.

Importing a library's top package leaves most of what a model needs to its first load: a
gradient-boosted classifier's ``joblib.load`` still imported ``sklearn.ensemble`` and what
it pulls in (trees, metrics, linear models), about 0.26 s in each worker. So the modules of
these libraries that a pickled model (``*.joblib``/``*.pkl``) names for its objects' classes
are imported early too: read from the pickle's opcodes, without loading it, up to the
first array a joblib file writes raw into the stream (a compressed file names none here).

Only the library the default loader imports for the model file (scikit-learn for
``*.joblib``/``*.pkl``, XGBoost, LightGBM) is imported early, and only for a model with no
user module and no ``code/requirements.txt``: a user module's imports are its own to make
(SageMaker runs it in each worker), and a requirements file may install another version of
the library than the one this process would find. PyTorch and ONNX Runtime are left to each
worker, which may be pinned to its own GPU as it starts. An import that fails here is not
reported here: the worker's own load fails the same way and says why.
"""

import importlib
import io
import logging
import pickletools
import re
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from batchinfer.model_artifact import MODEL_FILE_KINDS, default_model_file
from batchinfer.serving.model_requirements import REQUIREMENTS
from batchinfer.serving.readable import find_user_module
from batchinfer.serving.server_errors import ModelLoadError

LOG = logging.getLogger(__name__)
LIBRARY_OF_KIND = {"scikit-learn": "sklearn", "XGBoost": "xgboost", "LightGBM": "lightgbm"}
_PICKLE_HEAD = 1 << 20  # the bytes of a model file read for the modules its pickle names
_PICKLE_PROTOCOL_2_ON = b"\x80"  # the opcode a pickle of protocol 2 or later starts with
_STRING_OPCODES = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"})
_PUT_OPCODES = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_GET_OPCODES = frozenset({"GET", "BINGET", "LONG_BINGET"})
_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)


def shared_libraries(model_dir: Path, env: Mapping[str, str], workers: int) -> tuple[str, ...]:
    """The model library to import before ``workers`` workers of ``model_dir`` fork, and the
    modules of it its pickle names (see above), ``env`` being what they load the model
    with: none for one worker, for a model with a user module or requirements, or whose
    model file (the one the default loader picks) is of no kind named in
    :data:`LIBRARY_OF_KIND`."""
    if workers < 2:
        return ()
    try:
        if find_user_module(model_dir, env) or (model_dir / REQUIREMENTS).exists():
            return ()
        model_file = default_model_file(model_dir)
    except (ModelLoadError, OSError):
        return ()  # the workers' own load says what is wrong
    if model_file is None:
        return ()
    library = LIBRARY_OF_KIND.get(MODEL_FILE_KINDS[model_file.suffix])
    if library is None:
        return ()
    return (library, *pickled_modules(model_file, LIBRARY_OF_KIND.values()))


def pickled_modules(path: Path, packages: Collection[str]) -> tuple[str, ...]:
    """The modules of ``packages`` that the pickle in ``path`` names for its objects'
    classes, in the order named, read from its first opcodes without loading it: as far as
    its first :data:`_PICKLE_HEAD` bytes go, or a joblib file's first array; none for a file
    that is not a pickle of protocol 2 or later (compressed, text). A class whose module and
    name are not both strings the pickle pushed (or fetched from its memo) just before is
    passed over, and so is a name that is not a dotted Python identifier."""
    try:
        with path.open("rb") as file:
            head = file.read(_PICKLE_HEAD)
    except OSError:
        return ()
    if not head.startswith(_PICKLE_PROTOCOL_2_ON):
        return ()
    named: dict[str, None] = {}
    pushed: list[str | None] = [None, None]  # the strings pushed last; None: something else
    memo: dict[object, str | None] = {}  # by index
    try:
        for opcode, argument, _ in pickletools.genops(io.BytesIO(head)):
            if opcode.name in _STRING_OPCODES:
                pushed.append(str(argument))
            elif opcode.name == "MEMOIZE":
                memo[len(memo)] = pushed[-1]
            elif opcode.name in _PUT_OPCODES:
                memo[argument] = pushed[-1]
            elif opcode.name in _GET_OPCODES:
                pushed.append(memo.get(argument))
            elif opcode.name == "GLOBAL":
                named[str(argument).split(" ")[0]] = None
                pushed.append(None)
            elif opcode.name == "STACK_GLOBAL":
                module, name = pushed[-2:]
                if module is not None and name is not None:
                    named[module] = None
                pushed.append(None)
            elif opcode.stack_after:
                pushed.append(None)
            del pushed[:-2]
    except ValueError:  # a joblib array's raw bytes, or the end of the bytes read
        pass
    return tuple(
        module
        for module in named
        if _MODULE_NAME.fullmatch(module) and module.partition(".")[0] in packages
    )


def import_libraries(modules: Iterable[str]) -> None:
    """Import ``modules`` (named by :func:`shared_libraries`) in the process the workers fork
    from; one that fails to import is left to the workers."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # any failure: each worker's load reports it
            LOG.debug("%s not imported before the workers fork: %s", module, exc)
