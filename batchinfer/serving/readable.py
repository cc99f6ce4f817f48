"""Whether a model can read a content type at all, told before any model server starts,
and where its user module is.

The default handler decodes the types of :data:`batchinfer.media_types.DECODED_TYPES`; any
other type is answered 415 by every request, so a job would fail every file. A user module
that defines ``input_fn`` or ``transform_fn`` reads the body itself and decides. The module
is read, not run: its source is parsed for those top-level functions. Nothing here imports
the model's libraries (or NumPy), so the engine asks before it starts a server.
"""

import ast
from collections.abc import Mapping
from pathlib import Path

from batchinfer.errors import ValidationError
from batchinfer.media_types import CSV, DECODED_TYPES, codec_type
from batchinfer.serving.server_errors import ModelLoadError

USER_MODULE = "inference.py"
PROGRAM_VAR = "SAGEMAKER_PROGRAM"

READERS = frozenset({"input_fn", "transform_fn"})


def defined_functions(path: Path) -> frozenset[str] | None:
    """The names ``path`` defines at its top level (functions, assignments, imports);
    None when it cannot be read or parsed (the model server will say why)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {alias.asname or alias.name for alias in node.names}
    return frozenset(names)


def find_user_module(model_dir: Path, env: Mapping[str, str]) -> Path | None:
    """The user module: ``code/<name>`` then ``<name>``, ``<name>`` = SAGEMAKER_PROGRAM or
    inference.py. A SAGEMAKER_PROGRAM that names no file is an error."""
    name = env.get(PROGRAM_VAR) or USER_MODULE
    for folder in (model_dir / "code", model_dir):
        if (folder / name).is_file():
            return folder / name
    if env.get(PROGRAM_VAR):
        raise ModelLoadError(
            f"{PROGRAM_VAR}={name}: no such file in {model_dir / 'code'} or {model_dir}"
        )
    return None


def check_readable(
    model_dir: Path, environment: Mapping[str, str], content_type: str | None
) -> Path | None:
    """Refuse ``content_type`` when the default handler cannot decode it and the model's user
    module (if any) defines neither ``input_fn`` nor ``transform_fn``; the user module found
    (None: there is none, or SAGEMAKER_PROGRAM names no file, which the model servers
    report)."""
    try:
        module = find_user_module(model_dir, environment)
    except ModelLoadError:
        return None
    kind = codec_type(content_type) or CSV
    if kind in DECODED_TYPES:
        return module
    defined = defined_functions(module) if module else frozenset()
    if defined is None or defined & READERS:
        return module
    where = (
        f"{module.relative_to(model_dir).as_posix()} defines neither input_fn nor transform_fn"
        if module
        else "the model has no code/inference.py with an input_fn or transform_fn"
    )
    raise ValidationError(
        f"content_type (ContentType): {content_type!r} is not a type the default handler "
        f"decodes ({', '.join(sorted(DECODED_TYPES))}), and {where} to read it; every "
        "request would be refused with 415"
    )
