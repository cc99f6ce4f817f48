"""Whether a user module imports only what batchinfer's image provides.

A user module runs unchanged in the image when each module it imports (``import x``,
``from x import y``, at any depth; relative imports are its own) is in the standard library,
beside it in ``code/``, installed by the image (``image_modules.txt``: the top-level modules
of requirements.txt's distributions and of everything they depend on, generated from
requirements.txt) or brought by the model's ``code/requirements.txt``, which the image
installs at model load. The module is parsed, not run, and nothing heavy is imported.
"""

import ast
import importlib.metadata
import sys
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from batchinfer.serving.model_requirements import REQUIREMENTS, read_requirements

IMAGE_MODULES = Path(__file__).with_name("image_modules.txt")


def imported_modules(path: Path) -> frozenset[str]:
    """The top-level names of the absolute imports anywhere in ``path`` (none when it cannot
    be parsed: the model server says why)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return frozenset(names)


def image_modules() -> frozenset[str]:
    """The top-level modules the image installs (the first column of ``image_modules.txt``)."""
    lines = IMAGE_MODULES.read_text().splitlines()
    return frozenset(line.split()[0] for line in lines if line and not line.startswith("#"))


def distribution_modules(requirements: Iterable[Requirement]) -> dict[str, str]:
    """``{top-level module: distribution}`` for the distributions ``requirements`` name and
    everything they depend on, as installed in this environment. A distribution not installed
    here counts as providing the module its name spells (``my-lib``: ``my_lib``)."""
    by_distribution: dict[str, list[str]] = {}
    for module, distributions in importlib.metadata.packages_distributions().items():
        for distribution in distributions:
            by_distribution.setdefault(canonicalize_name(distribution), []).append(module)
    modules: dict[str, str] = {}
    pending, seen = list(requirements), set()
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        for module in by_distribution.get(name, [name.replace("-", "_")]):
            if module.isidentifier():
                modules.setdefault(module, name)
        try:
            needs = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        extras = {"", *requirement.extras}
        for text in needs:
            need = Requirement(text)
            marker = need.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in extras):
                pending.append(need)
    return modules


def unprovided_imports(module: Path, model_dir: Path) -> list[str]:
    """The modules ``module`` imports that neither the standard library, its own folder, the
    image nor ``model_dir``'s ``code/requirements.txt`` provides, sorted."""
    imports = imported_modules(module) - sys.stdlib_module_names - image_modules()
    imports -= {p.stem if p.suffix == ".py" else p.name for p in module.parent.iterdir()}
    requirements = model_dir / REQUIREMENTS
    if imports and requirements.is_file():
        imports -= distribution_modules(read_requirements(requirements)).keys()
    return sorted(imports)


def imports_note(module: str, unprovided: list[str]) -> str | None:
    """What to add so that the user module ``module`` runs in the image; None when nothing."""
    if not unprovided:
        return None
    names = ", ".join(unprovided)
    them = "it" if len(unprovided) == 1 else "them"
    return (
        f"{module} imports {names}, which batchinfer's image does not provide: add {them} to "
        f"code/requirements.txt (the image installs it at model load)"
    )
