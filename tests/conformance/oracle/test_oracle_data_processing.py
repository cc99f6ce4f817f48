"""Filters and joins (R15-R18). The SDK's local mode ignores DataProcessing, so it cannot
judge them whole: it transforms the filtered records, and the join and the OutputFilter are
applied to its predictions record by record with the csv and json modules."""

import csv
import io
import json

import pytest

from tests.conformance.oracle.departures import DATA_PROCESSING
from tests.conformance.oracle.outputs import output_tree, write_tree
from tests.conformance.oracle.sdk_local import sdk_transform

pytestmark = pytest.mark.oracle

LINES = dict(split_type="Line", batch_strategy="MultiRecord", assemble_with="Line")
CSV = dict(LINES, content_type="text/csv", accept="text/csv")
JSON_LINES = dict(LINES, content_type="application/jsonlines", accept="application/jsonlines")


def csv_rows(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode())))


def csv_bytes(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def test_csv_input_filter_join_and_output_filter_e1_r15_r16_r17(
    tmp_path, row_sum_model, batchinfer_run
):
    """E1 over 300 rows whose first field is a numeric id, in two MultiRecord files."""
    files = {
        f"part{p}.csv": csv_bytes([[str(900 + i), str(i), str(p * i)] for i in range(150)])
        for p in (1, 2)
    }
    data = write_tree(tmp_path / "in", files)
    processing = dict(input_filter="$[1:]", join_source="Input", output_filter="$[0,-1]")
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **CSV, **processing)

    ignored = sdk_transform(
        row_sum_model, f"file://{data}", f"file://{tmp_path / 'x'}", **CSV, **processing
    )
    assert ignored.description["TransformJobStatus"] == "Completed"
    whole_row_sums = {
        f"{name}.out": csv_bytes([[str(sum(map(int, row)))] for row in csv_rows(body)])
        for name, body in files.items()
    }
    assert output_tree(tmp_path / "x") == whole_row_sums, str(DATA_PROCESSING)

    filtered = write_tree(
        tmp_path / "filtered",
        {name: csv_bytes([row[1:] for row in csv_rows(body)]) for name, body in files.items()},
    )
    sdk_transform(row_sum_model, f"file://{filtered}", f"file://{tmp_path / 'sdk'}", **CSV)
    corrected = {}
    for name, body in files.items():
        predictions = csv_rows(output_tree(tmp_path / "sdk")[f"{name}.out"])
        joined = [
            row + prediction for row, prediction in zip(csv_rows(body), predictions, strict=True)
        ]
        corrected[f"{name}.out"] = csv_bytes([[row[0], row[-1]] for row in joined])

    assert ours.exit_code == 0, ours.said
    assert ours.records_in() == {"part1.csv": 150, "part2.csv": 150}
    assert output_tree(tmp_path / "ours") == corrected
    assert corrected["part2.csv.out"].startswith(b"900,0\n901,3\n902,6\n")


def test_json_lines_input_filter_join_and_output_filter_e2_r16_r18(
    tmp_path, row_sum_model, batchinfer_run
):
    """E2 over objects and non-objects: an object gets SageMakerOutput; an array is wrapped
    as SageMakerInput (with no InputFilter, as the filter applies to objects here)."""
    records = [{"id": f"r{i}", "f": [i, i + 0.5]} for i in range(40)]
    objects = "".join(json.dumps(r) + "\n" for r in records).encode()
    arrays = b"[1,2]\n[3,4.5]\n"
    data = write_tree(tmp_path / "in", {"objects.jsonl": objects})
    plain = write_tree(tmp_path / "plain", {"arrays.jsonl": arrays})
    processing = dict(
        input_filter="$.f", join_source="Input", output_filter="$['id','SageMakerOutput']"
    )
    ours = batchinfer_run(row_sum_model, data, tmp_path / "ours", **JSON_LINES, **processing)
    ours_arrays = batchinfer_run(
        row_sum_model, plain, tmp_path / "ours-arrays", **JSON_LINES, join_source="Input"
    )

    filtered = write_tree(
        tmp_path / "filtered",
        {"objects.jsonl": "".join(json.dumps(r["f"]) + "\n" for r in records).encode()},
    )
    sdk_transform(row_sum_model, f"file://{filtered}", f"file://{tmp_path / 'sdk'}", **JSON_LINES)
    sdk_transform(
        row_sum_model,
        f"file://{plain}",
        f"file://{tmp_path / 'sdk-arrays'}",
        **JSON_LINES,
    )

    def compact(value: object) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode() + b"\n"

    predictions = output_tree(tmp_path / "sdk")["objects.jsonl.out"].splitlines()
    corrected = b"".join(
        compact({"id": r["id"], "SageMakerOutput": json.loads(p)})
        for r, p in zip(records, predictions, strict=True)
    )
    array_predictions = output_tree(tmp_path / "sdk-arrays")["arrays.jsonl.out"].splitlines()
    wrapped = b"".join(
        compact({"SageMakerInput": json.loads(a), "SageMakerOutput": json.loads(p)})
        for a, p in zip(arrays.splitlines(), array_predictions, strict=True)
    )

    assert ours.exit_code == ours_arrays.exit_code == 0, ours.said + ours_arrays.said
    assert output_tree(tmp_path / "ours") == {"objects.jsonl.out": corrected}
    assert output_tree(tmp_path / "ours-arrays") == {"arrays.jsonl.out": wrapped}
    assert corrected.startswith(b'{"id":"r0","SageMakerOutput":{"score":0.5}}\n')
