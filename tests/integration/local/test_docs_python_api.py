"""docs/python-api.md run as written: its bash block writes the bundled example, its Python
blocks run in order in one interpreter, each ``print(...)  # shown`` comment is what that
line printed, and the Transformer's join is each input row with the first run's prediction
(R17: a CSV join appends the prediction to its row)."""

import re
import subprocess
import sys

from tests.integration.local.test_docs_examples import DOCS, doc_block, run_as_written

PAGE = DOCS / "python-api.md"


def test_the_python_api_page_runs_as_written_r17(tmp_path):
    commands, _ = doc_block(PAGE, "# Python API")
    assert [argv[:3] for argv in commands] == [["batchinfer", "example", "demo"]]
    run_as_written(commands[0], tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert len(blocks) == 4
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    shown = re.findall(r"^\s*print\(.*\)  # (.*)$", "\n".join(blocks), re.MULTILINE)
    assert len(shown) == 3
    for comment in shown:
        assert any(line.startswith(comment.removesuffix("...")) for line in printed), comment
    demo = tmp_path / "demo"
    rows = (demo / "input" / "data.csv").read_text().splitlines()
    predictions = (demo / "output" / "data.csv.out").read_text().splitlines()
    joined = (demo / "joined" / "data.csv.out").read_text().splitlines()
    assert len(rows) == 1000
    assert joined == [f"{row},{answer}" for row, answer in zip(rows, predictions, strict=True)]
    assert not (demo / "bad").exists()
