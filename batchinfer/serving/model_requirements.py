"""A model's ``code/requirements.txt``: installed at model load in the inference image, only
checked elsewhere.

SageMaker's framework containers pip install ``code/requirements.txt`` before they import the
user module, and so does the image: its Dockerfile sets ``BATCHINFER_REQUIREMENTS_TARGET`` to
a directory the server's user may write. The requirements are installed there (``pip install
--prefix``, so what the image already holds satisfies them), from the wheels in ``code/lib/``
alone when that folder exists (``--no-index``: a VPC-only account reaches no package index),
else from the index, and its site-packages goes first on ``sys.path`` and ``PYTHONPATH`` (for
processes the model starts). Each requirements file is installed once: the model server's
master installs it before it forks its workers, and where several processes load the model
(a processing job's workers) a lock holds the others until the first has installed it and a
marker tells them it is done.

Without the variable (``batchinfer run`` or ``serve`` on a laptop) nothing is installed into
the user's environment: each requirement must already be satisfied there, or the model does
not load, with one line naming it and the ``pip install -r`` that installs it.
"""

import fcntl
import hashlib
import importlib
import importlib.metadata
import logging
import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from batchinfer.serving.server_errors import ModelLoadError

LOG = logging.getLogger(__name__)
TARGET_VAR = "BATCHINFER_REQUIREMENTS_TARGET"
REQUIREMENTS = Path("code/requirements.txt")
WHEELS = "lib"  # beside requirements.txt, in code/
_INSTALLED_MARKER = ".installed"
_COMMENT = re.compile(r"(^|\s)#.*")
# How pip names a requirement it found no distribution for.
_PIP_NOT_FOUND = re.compile(r"No matching distribution found for (\S+)")


def read_requirements(path: Path) -> list[Requirement]:
    """The requirements of the pip requirements file ``path``. Option lines (``-r``,
    ``--index-url``, ...) are pip's to follow and are skipped here."""
    requirements = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = _COMMENT.sub("", line).strip()
        if not text or text.startswith("-"):
            continue
        try:
            requirements.append(Requirement(text))
        except InvalidRequirement as exc:
            raise ModelLoadError(f"{path}:{number}: {text!r} is not a requirement: {exc}") from None
    return requirements


def unmet_requirements(requirements: list[Requirement]) -> list[str]:
    """Each requirement (whose marker applies) that this environment does not satisfy, with
    what it holds instead: ``torch>=2 (not installed)``, ``numpy<2 (2.4.6 installed)``."""
    unmet = []
    for requirement in requirements:
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            unmet.append(f"{requirement} (not installed)")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            unmet.append(f"{requirement} ({version} installed)")
    return unmet


def ensure_requirements(model_dir: Path, env: Mapping[str, str]) -> None:
    """Make ``model_dir``'s ``code/requirements.txt`` (if any) importable: install it where
    ``env`` sets BATCHINFER_REQUIREMENTS_TARGET, then check that every requirement is met.
    Raises :class:`ModelLoadError` naming the requirements that are not."""
    path = (model_dir / REQUIREMENTS).absolute()  # pip runs in code/
    if not path.is_file():
        return
    requirements = read_requirements(path)
    target = env.get(TARGET_VAR)
    if target:
        install_requirements(path, Path(target).absolute())
    unmet = unmet_requirements(requirements)
    if not unmet:
        return
    if target:
        raise ModelLoadError(f"{path}: installed, yet not satisfied: {', '.join(unmet)}")
    raise ModelLoadError(
        f"{path}: not satisfied in this Python environment: {', '.join(unmet)} "
        f"(batchinfer installs a model's requirements only in its image); "
        f"install them with: pip install {' '.join([*_index_options(path), '-r', str(path)])}"
    )


def install_requirements(path: Path, target: Path) -> None:
    """Install the requirements file ``path`` under ``target`` once and put it on the path."""
    wheels = path.with_name(WHEELS)
    wheel_names = sorted(p.name for p in wheels.iterdir()) if wheels.is_dir() else []
    digest = hashlib.sha256(path.read_bytes() + "\n".join(wheel_names).encode()).hexdigest()
    prefix = target / digest[:16]
    try:
        target.mkdir(parents=True, exist_ok=True)
        lock = (target / ".lock").open("w")
    except OSError as exc:
        raise ModelLoadError(f"{TARGET_VAR}={target}: cannot install there: {exc}") from exc
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (prefix / _INSTALLED_MARKER).exists():
            _pip_install(path, prefix)
            (prefix / _INSTALLED_MARKER).touch()
    _put_on_path(prefix)


def _index_options(path: Path) -> list[str]:
    """pip's options for the requirements file ``path``: code/lib/'s wheels alone, if any."""
    wheels = path.with_name(WHEELS)
    return ["--no-index", "--find-links", str(wheels)] if wheels.is_dir() else []


def _pip_install(path: Path, prefix: Path) -> None:
    options = _index_options(path)
    LOG.info("installing %s into %s %s", path, prefix, " ".join(options))
    command = [
        *(sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"),
        *("--no-warn-script-location", "--prefix", str(prefix), *options, "-r", str(path)),
    ]
    # From code/, as SageMaker's containers run it: relative paths in the file start there.
    done = subprocess.run(command, cwd=path.parent, capture_output=True, text=True, check=False)
    output = (done.stdout + done.stderr).splitlines()
    if done.returncode == 0:
        LOG.info("%s", output[-1] if output else "pip installed nothing")
        return
    errors = [line.removeprefix("ERROR: ") for line in output if line.startswith("ERROR:")]
    said = errors[-1] if errors else (output[-1] if output else f"exit code {done.returncode}")
    found = _PIP_NOT_FOUND.search("\n".join(output))
    what = found.group(1) if found else "its requirements"
    where = f" from {path.with_name(WHEELS)} (no index)" if options else ""
    raise ModelLoadError(f"{path}: pip could not install {what}{where}: {said}")


def _put_on_path(prefix: Path) -> None:
    """Put the site-packages of ``prefix`` first on ``sys.path`` (after the code/ folder the
    user module's import adds) and on PYTHONPATH, which processes started later inherit."""
    scheme = sysconfig.get_preferred_scheme("prefix")
    variables = {"base": str(prefix), "platbase": str(prefix)}
    paths = (sysconfig.get_path(name, scheme, variables) for name in ("purelib", "platlib"))
    folders = list(dict.fromkeys(paths))
    for folder in reversed(folders):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*folders, *inherited]))
    importlib.invalidate_caches()
