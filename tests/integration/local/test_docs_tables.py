"""docs/tables.md's recipes, run exactly as written: its Python block makes the model and
the data, each bash block runs, and every output equals ``pipeline.predict`` in process
(R6: the header row is no record; R16: ``$.features`` selects what the model gets)."""

import re
import subprocess
import sys
from pathlib import Path

import joblib
import pandas as pd

from tests.integration.local.test_docs_examples import DOCS, doc_block, run_as_written

TABLES = DOCS / "tables.md"
RECIPES = {
    "### A CSV with a header and a DataFrame Pipeline": "out/csv/customers.csv.out",
    "### Named JSON features": "out/json/customers.jsonl.out",
    "### A European export: semicolons and latin-1": "out/export/export.csv.out",
    "### Your own `input_fn`, with its requirements": "out/code/customers.csv.out",
}


def python_block(text: str, heading: str) -> str | None:
    """The Python block between ``heading`` and the next bash block, if there is one."""
    section = text[text.index(heading) :]
    section = section[: section.index("```bash")]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    return block.group(1) if block else None


def test_the_table_recipes_run_as_written_and_predict_as_the_pipeline_does(tmp_path: Path):
    text = TABLES.read_text()
    setup = python_block(text, "## Recipes")
    assert setup, "no Python block under ## Recipes"
    subprocess.run([sys.executable, "-c", setup], cwd=tmp_path, check=True, timeout=300)
    pipeline = joblib.load(tmp_path / "model" / "model.joblib")
    expected = [str(v) for v in pipeline.predict(pd.read_csv(tmp_path / "input" / "customers.csv"))]
    for heading, output in RECIPES.items():
        prepare = python_block(text, heading)
        if prepare:
            subprocess.run([sys.executable, "-c", prepare], cwd=tmp_path, check=True, timeout=60)
        commands, _ = doc_block(TABLES, heading)
        assert [argv[:2] for argv in commands] == [["batchinfer", "run"]], heading
        run_as_written(commands[0], tmp_path)
        assert (tmp_path / output).read_text().splitlines() == expected, heading
