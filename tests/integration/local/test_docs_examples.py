"""The documentation's examples, run exactly as written: the JSON Lines example of
docs/local-mode.md on the data it generates (R15 filters and a join, R16 the filter
language, R18 the JSON join), and the ``batchinfer plan`` transcript of docs/plan.md."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[3] / "docs"
LOCAL_MODE = DOCS / "local-mode.md"
PLAN = DOCS / "plan.md"


def doc_block(page: Path, heading: str) -> tuple[list[list[str]], list[str]]:
    """The commands (as argv lists) and the ``# `` comment lines of the first bash block
    under ``heading`` in ``page``."""
    text = page.read_text()
    section = text[text.index(heading) :]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, f"no bash block under {heading!r} in {page}"
    joined = block.group(1).replace("\\\n", " ")
    commands = [shlex.split(line) for line in joined.splitlines() if line.strip()[:1] not in "#"]
    comments = [line[2:] for line in joined.splitlines() if line.startswith("# ")]
    return commands, comments


def run_as_written(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """One documented command, run as printed (200 columns, so tables do not wrap)."""
    done = subprocess.run(
        [sys.executable, "-m", "batchinfer", *argv[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ | {"COLUMNS": "200"},
    )
    assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stderr}"
    return done


def test_the_json_lines_example_runs_as_written_r15_r16_r18(tmp_path):
    commands, comments = doc_block(LOCAL_MODE, "### JSON Lines")
    assert [argv[:2] for argv in commands] == [["batchinfer", "example"], ["batchinfer", "run"]]
    assert "--input-filter" in commands[1] and "$.features" in commands[1]
    for argv in commands:
        run_as_written(argv, tmp_path)
    output = tmp_path / ".demo-jsonl" / "output" / "data.jsonl.out"
    with output.open() as lines:
        first = next(lines)
    assert json.loads(first) == json.loads(comments[0])
    assert (tmp_path / ".demo-jsonl" / "output" / "_SUCCESS").exists()


def test_the_plan_transcript_runs_as_written_and_its_counts_are_what_plan_prints(tmp_path):
    """The ``batchinfer plan`` transcript under "Before you pay" in docs/plan.md: its
    commands run as written, and the lines that do not depend on this machine's speed are
    printed as shown."""
    text = PLAN.read_text()
    section = text[text.index("## Before you pay") :]
    block = re.search(r"```console\n(.*?)```", section, re.DOTALL)
    assert block, f"no console block under 'Before you pay' in {PLAN}"
    joined = block.group(1).replace("\\\n", " ")
    lines = joined.splitlines()
    commands = [shlex.split(line[2:]) for line in lines if line.startswith("$ ")]
    shown = [line for line in lines if not line.startswith("$ ")]
    assert [argv[:2] for argv in commands] == [["batchinfer", "example"], ["batchinfer", "plan"]]
    for argv in commands:
        done = run_as_written(argv, tmp_path)
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    measured = ("calibration:", "estimate:", "cost:")
    for line in shown:
        if not line.startswith(measured) and "CPUs busy" not in line:  # this machine's
            assert line.rstrip() in printed, f"{PLAN.name} shows {line!r}; plan printed {printed}"
    assert [line.split(":")[0] for line in printed if line.startswith(measured)] == [
        "calibration",
        "estimate",
        "cost",
    ]
