"""What the CLI prints of user text (paths, run ids, errors) is shown as it is, never read
as rich markup: a path like ``scores[region]/in.csv`` keeps its brackets; and every kind of
error exits with its own documented code."""

import re
from pathlib import Path

from rich.console import Console

from batchinfer.commands.cloud import run_table, shard_table
from batchinfer.errors import BatchInferError
from tests.support.cli import run_cli


def _render(renderable) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


def test_status_tables_show_brackets_in_run_ids_names_and_errors():
    run = {
        "run_id": "scores[eu]",
        "run_status": "FAILED",
        "input": "s3://b/input/scores[region]/",
        "error": "InputError",
        "cause": "scores[region]/in.csv: record 3: [bold]not a number[/]",
    }
    shards = [{"shard": 0, "name": "scores[region]/in.csv", "status": "MISSING", "reason": "[x]"}]
    text = _render(run_table(run)) + _render(shard_table(shards))
    for shown in ("run scores[eu]", "scores[region]/", "[bold]not a number[/]", "[x]"):
        assert shown in text


def test_an_error_naming_a_path_keeps_its_brackets(tmp_path, capsys):
    missing = tmp_path / "scores[region]" / "in.csv"
    code, printed = run_cli(
        capsys, "run", str(missing), "--model", str(tmp_path), "--output", str(tmp_path / "o")
    )
    assert code != 0
    assert "scores[region]" in printed.replace("\n", "")


def test_version_prints_the_installed_version(capsys):
    code, printed = run_cli(capsys, "--version")
    assert code == 0 and printed.strip() == "batchinfer 0.1.0"


def _error_classes(base: type[BatchInferError]) -> list[type[BatchInferError]]:
    return [base] + [found for sub in base.__subclasses__() for found in _error_classes(sub)]


def test_each_kind_of_error_has_its_own_exit_code_and_the_docs_list_them_all():
    classes = [c for c in _error_classes(BatchInferError) if "exit_code" in vars(c)]
    codes = [c.exit_code for c in classes]
    assert len(codes) == len(set(codes)), codes
    page = (Path(__file__).parents[2] / "docs" / "operate.md").read_text()
    documented = {int(code) for code in re.findall(r"^\| (\d+) \| ", page, re.MULTILINE)}
    assert documented == {0, *codes}


def test_split_names_a_folder_with_brackets_as_it_is(tmp_path, capsys):
    source = tmp_path / "in.csv"
    source.write_text("".join(f"{i},{i * 2}\n" for i in range(1000)))
    output = tmp_path / "shards[eu]"
    code, printed = run_cli(capsys, "split", str(source), "--output", str(output), "--shards", "2")
    assert code == 0, printed
    title = printed[: printed.index(" shard ")]  # above the table's header
    assert "shards in" in title and "shards[eu]/" in "".join(title.split()), printed
