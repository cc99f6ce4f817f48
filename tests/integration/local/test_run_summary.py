"""What ``batchinfer run`` prints after a job, fitted to a terminal: a hint when SplitType None
sent a file of many lines as one record (R6), a summary table that fits 80 columns, and an
output preview whose lines are cut at a fixed width with their size."""

import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from rich.console import Console

from batchinfer.commands.run import PREVIEW_CHARS, preview
from batchinfer.commands.run_display import summary_notes, summary_table
from batchinfer.engine.job_result import FileResult, JobResult
from batchinfer.transform.settings import TransformSettings


def _run(tmp_path: Path, model: Path, *options: str) -> str:
    source = tmp_path / "in" / "scores.csv"
    source.parent.mkdir(exist_ok=True)
    source.write_bytes(b"1,2\n3,4\n5,6\n")
    command = [sys.executable, "-m", "batchinfer", "run", str(source), "--model", str(model)]
    command += ["--output", str(tmp_path / "out"), "--content-type", "text/csv", *options]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=os.environ | {"COLUMNS": "200"}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_file_of_many_lines_sent_whole_gets_a_split_type_hint_r6(tmp_path, row_sum_model):
    shown = _run(tmp_path, row_sum_model)  # SplitType None, the default: one request
    assert "hint: scores.csv went whole as one record (SplitType None, the default)" in shown
    assert "--split-type Line makes each line a record" in shown
    again = _run(
        tmp_path, row_sum_model, "--split-type", "Line", "--assemble-with", "Line", "--overwrite"
    )
    assert "hint:" not in again


def _result(tmp_path: Path, split_type: str, body: bytes) -> JobResult:
    source = tmp_path / "one.jsonl"
    source.write_bytes(body)
    settings = TransformSettings(content_type="application/jsonlines", split_type=split_type)
    file = FileResult("one.jsonl", str(source), ["one.jsonl.out"], "SUCCEEDED", 1, 1)
    return JobResult(
        "SUCCEEDED", str(tmp_path), "transform", "", 1.0, asdict(settings), None, [file], 0.0
    )


def test_the_hint_is_for_line_framed_content_of_more_than_one_line_only_r6(tmp_path):
    def hinted(split_type: str, body: bytes) -> bool:
        notes = summary_notes(_result(tmp_path, split_type, body))
        return any(note.startswith("hint: one.jsonl went whole") for note in notes)

    assert hinted("None", b'{"a": 1}\n{"a": 2}\n')
    assert not hinted("None", b'{"a": 1}\n')  # one record: sent whole is what it is
    assert not hinted("None", b'{"a": 1}\r\n')
    assert not hinted("Line", b'{"a": 1}\n{"a": 2}\n')


def _render(renderable: object, width: int) -> str:
    console = Console(width=width, record=True)
    console.print(renderable)
    return console.export_text()


def test_the_summary_table_fits_80_columns_without_cutting_a_figure():
    def file(name: str, status: str, records: int, instances: list[int]) -> FileResult:
        counted = records if status == "SUCCEEDED" else None
        return FileResult(
            name, name, [f"{name}.out"], status, records, counted, bytes_in=records * 45,
            seconds=9.87, rows_per_second=records / 9.87, shards=8, instances=instances,
        )  # fmt: skip

    files = [
        file("customers-2024-05-01.csv", "SUCCEEDED", 1_234_567, [1, 2, 3, 4]),
        file("customers-2024-05-02.csv", "FAILED", 35_012, [1, 3, 4]),
    ]
    result = JobResult("FAILED", "out", "transform", "", 21.5, {}, None, files, 0.0)
    result.transform_seconds = 12.34
    table = _render(summary_table(result), 80)
    assert "…" not in table and max(map(len, table.splitlines())) <= 80
    rows = [line.split() for line in table.splitlines()]
    assert ["8", "1-4", "1.23M", "1.23M", "55.6", "9.87", "125k", "ok"] in [r[-8:] for r in rows]
    assert ["8", "1,3,4", "35.0k", "-", "1.6", "9.87", "3,547", "FAILED"] in [r[-8:] for r in rows]
    assert ["1.27M", "-", "57.1", "12.34", "103k", "1", "not", "done"] in [r[-8:] for r in rows]


def test_a_preview_line_is_cut_at_a_fixed_width_with_its_size(tmp_path):
    output = tmp_path / "data.json.out"
    long_line = "[" + ", ".join(["0.123456789"] * 31_231) + "]"
    output.write_text(f"{long_line}\nshort\n{'é' * 150}\nnot shown\n")
    first, second, third = preview(output)
    assert first == f"{long_line[:PREVIEW_CHARS]}… ({len(long_line):,} bytes)"
    assert len(long_line) > 400_000 and second == "short"
    assert third == f"{'é' * PREVIEW_CHARS}… (300 bytes)"  # 2 bytes each
    whole, cut = "x" * PREVIEW_CHARS, "y" * (PREVIEW_CHARS + 1)
    output.write_bytes(f"{whole}\r\n{cut}\r\nno newline at the end".encode())
    assert preview(output) == [whole, f"{cut[:-1]}… ({len(cut)} bytes)", "no newline at the end"]
