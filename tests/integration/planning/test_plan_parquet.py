"""``batchinfer plan`` on Parquet: the footer alone is read (rows, row groups, the largest
row group), a file is one request checked whole against MaxPayloadInMB (R8: a record larger
than MaxPayloadInMB fails its file), the model calibrates on whole files, and a Parquet file
planned as CSV is refused as `run` refuses it."""

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from batchinfer.transform.parquet_footer import footer_of
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
        f"big.parquet: a Parquet request of {data.stat().st_size:,} bytes (80,000 rows in 4 row "
        "group(s), the largest "
    )
    assert "is over MaxPayloadInMB=1 (1,048,576 bytes); a Parquet file is sent whole: " in message
    assert "--shards auto splits it into shards of row groups within the limit" in message


def test_r8_shards_auto_plans_shards_of_row_groups_each_within_max_payload(capsys, tmp_path):
    """The same file with --shards auto: its 4 row groups of under 1 MiB each make 4 shards
    (two would not fit one), the largest request is the largest shard, and it fits."""
    data = tmp_path / "big.parquet"
    table = frame(80_000).assign(note=[f"{i:032d}" for i in range(80_000)])
    table.to_parquet(data, index=False, row_group_size=20_000, compression="none")
    plan = plan_json(capsys, data, *PARQUET, "--max-payload-mb", "1", "--shards", "auto")
    assert plan["warnings"] == []
    (listed,) = plan["files"]
    assert (listed["shards"], plan["shards"]) == (4, 4)
    largest = plan["largest_record"]
    assert largest["fits"] is True and largest["bytes"] <= 1 << 20
    assert largest["bytes"] > listed["largest_row_group"]  # the footer and magic with it
    assert largest["record"] in (1, 20_001, 40_001, 60_001)  # the first row of that shard
    code, printed = run_cli(
        capsys, "plan", str(data), *PARQUET, "--max-payload-mb", "1", "--shards", "auto"
    )
    assert code == 0
    assert "the largest of its 4 shards of whole row groups" in " ".join(printed.split())


def test_a_row_group_over_max_payload_is_named_and_smaller_row_groups_asked_for(capsys, tmp_path):
    data = tmp_path / "one.parquet"
    frame(80_000).assign(note=[f"{i:032d}" for i in range(80_000)]).to_parquet(
        data, index=False, compression="none"
    )
    plan = plan_json(capsys, data, *PARQUET, "--max-payload-mb", "1", "--shards", "auto")
    assert codes(plan) == ["record-too-large"]
    message = plan["warnings"][0]["message"]
    assert "a request holds whole row groups: write the file with smaller row groups" in message


def test_a_parquet_file_planned_as_csv_is_refused_naming_it(capsys, tmp_path):
    data = tmp_path / "data.parquet"
    frame(10).to_parquet(data, index=False)
    code, printed = run_cli(capsys, "plan", str(data), *CSV)
    assert code != 0
    assert f"{data}: is a Parquet file (starts with PAR1) but content_type is text/csv" in printed


def test_a_row_group_just_under_the_limit_whose_request_is_over_asks_for_smaller_groups(
    capsys, tmp_path
):
    """The advice follows the engine's rule: a row group fits a request when it fits with
    the magic and a footer, not when its own bytes do; so a row group a few bytes under
    MaxPayloadInMB is one no shard can hold."""
    limit = 1 << 20
    data = tmp_path / "edge.parquet"

    def group_bytes(rows: int) -> int:
        values = pd.DataFrame({"x": np.arange(rows, dtype="float64")})
        values.to_parquet(
            data, index=False, compression="none", use_dictionary=False, row_group_size=rows
        )
        return footer_of(data.read_bytes()).row_groups[0].size

    rows = limit // 8
    for _ in range(3):  # 8 bytes a row, and a few for the page headers
        rows += (limit - 16 - group_bytes(rows)) // 8
    assert limit - 100 < group_bytes(rows) < limit  # under the limit alone, not with a footer
    plan = plan_json(capsys, data, *PARQUET, "--max-payload-mb", "1", "--shards", "auto")
    assert codes(plan) == ["record-too-large"]
    assert "write the file with smaller row groups" in plan["warnings"][0]["message"]
