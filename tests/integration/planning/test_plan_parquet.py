"""``batchinfer plan`` on Parquet: the footer alone is read (rows, row groups, the largest
row group), a file is one request checked whole against MaxPayloadInMB (R8: a record larger
than MaxPayloadInMB fails its file), the model calibrates on whole files, and a Parquet file
planned as CSV is refused as `run` refuses it."""

import pyarrow.parquet as pq

from tests.integration.planning.test_plan_cli import CSV, codes, plan_json
from tests.support.cli import run_cli
from tests.support.frames import frame

PARQUET = ["--content-type", "application/x-parquet"]


def test_plan_counts_rows_and_row_groups_from_the_footer_and_calibrates_on_the_file(
    capsys, tmp_path, frame_model
):
    data = tmp_path / "data.parquet"
    frame(1000).to_parquet(data, index=False, row_group_size=300)
    plan = plan_json(capsys, data, *PARQUET, "--model", frame_model)
    (listed,) = plan["files"]
    metadata = pq.ParquetFile(data).metadata
    assert (plan["records"], listed["row_groups"]) == (1000, metadata.num_row_groups) == (1000, 4)
    assert listed["largest_row_group"] == max(
        sum(metadata.row_group(g).column(c).total_compressed_size for c in range(3))
        for g in range(4)
    )
    assert plan["largest_record"]["bytes"] == data.stat().st_size
    assert plan["largest_record"]["fits"] is True
    assert plan["calibration"]["records"] == 1000
    assert plan["warnings"] == []


def test_a_parquet_file_over_max_payload_is_named_with_its_row_groups(capsys, tmp_path):
    data = tmp_path / "big.parquet"
    table = frame(80_000).assign(note=[f"{i:032d}" for i in range(80_000)])
    table.to_parquet(data, index=False, row_group_size=20_000, compression="none")
    plan = plan_json(capsys, data, *PARQUET, "--max-payload-mb", "1")
    assert codes(plan) == ["record-too-large"]
    message = plan["warnings"][0]["message"]
    assert message.startswith(
        f"big.parquet: a Parquet file of {data.stat().st_size:,} bytes (80,000 rows in 4 row "
        "group(s), the largest "
    )
    assert "over MaxPayloadInMB=1 (1,048,576 bytes), and a Parquet file is sent whole" in message


def test_a_parquet_file_planned_as_csv_is_refused_naming_it(capsys, tmp_path):
    data = tmp_path / "data.parquet"
    frame(10).to_parquet(data, index=False)
    code, printed = run_cli(capsys, "plan", str(data), *CSV)
    assert code != 0
    assert f"{data}: is a Parquet file (starts with PAR1) but content_type is text/csv" in printed
