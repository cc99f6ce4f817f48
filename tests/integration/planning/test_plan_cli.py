"""``batchinfer plan`` as a user runs it: objects, shards, the largest record, warnings,
and with a model a measured throughput turned into duration and cost."""

import gzip
import json
import os
from pathlib import Path

import pytest

from batchinfer.instances.prices import table_price
from batchinfer.instances.specs import instance_spec
from batchinfer.sharding import split
from tests.integration.planning.conftest import EXAMPLE_ROWS
from tests.support.cli import run_cli

CSV = ["--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line"]


def plan_json(capsys, *args: str | Path) -> dict:
    code, printed = run_cli(capsys, "plan", *map(str, args), "--json")
    assert code == 0, printed
    return json.loads(printed)


def codes(plan: dict) -> list[str]:
    return [w["code"] for w in plan["warnings"]]


def test_plan_with_the_example_model_measures_rows_per_second_and_prices_the_job(
    capsys, example_dir
):
    plan = plan_json(
        capsys, example_dir / "input", *CSV, "--model", example_dir / "model",
        "--instance-type", "ml.c5.2xlarge", "--region", "eu-west-1", "--sample-records", "3000",
    )  # fmt: skip
    assert (plan["objects"], plan["records"], plan["shards"], plan["jobs"]) == (
        1,
        EXAMPLE_ROWS,
        1,
        1,
    )
    calibration, estimate = plan["calibration"], plan["estimate"]
    assert calibration["records"] == 3000 and calibration["rows_per_second"] > 0
    assert 1 <= calibration["busy_cpus"] <= calibration["local_cpus"] == os.cpu_count()
    # 8 vCPUs, 8 server workers, MaxConcurrentTransforms 8 (at most 100 // 6 MB)
    assert estimate["busy_cpus_per_instance"] == instance_spec("ml.c5.2xlarge").vcpus == 8
    assert estimate["rows_per_second_per_instance"] == pytest.approx(
        calibration["records"] / calibration["seconds"] / calibration["busy_cpus"] * 8
    )
    assert estimate["job_seconds"] == pytest.approx(
        EXAMPLE_ROWS / estimate["rows_per_second_per_instance"]
    )
    assert estimate["instance_hours"] == pytest.approx(estimate["job_seconds"] / 3600)
    assert estimate["usd_per_hour"] == table_price("ml.c5.2xlarge", "eu-west-1")
    assert estimate["cost_usd"] == pytest.approx(
        estimate["instance_hours"] * estimate["usd_per_hour"]
    )
    assert plan["warnings"] == []


def test_cost_counts_every_instance_until_the_last_shard_and_a_price_override_wins(
    capsys, example_dir
):
    plan = plan_json(
        capsys, example_dir / "input", *CSV, "--assemble-with", "Line", "--model",
        example_dir / "model", "--instance-count", "3", "--shards", "4", "--merge",
        "--price", "ml.m5.xlarge=2.5", "--engine", "processing",
    )  # fmt: skip
    estimate = plan["estimate"]
    assert plan["shards"] == 4 and len(estimate["instance_seconds"]) == 3
    assert estimate["job_seconds"] == max(estimate["instance_seconds"])
    assert estimate["instance_hours"] == pytest.approx(3 * estimate["job_seconds"] / 3600)
    assert (estimate["usd_per_hour"], estimate["price_source"]) == (2.5, "--price")
    assert estimate["cost_usd"] == pytest.approx(estimate["instance_hours"] * 2.5)
    assert codes(plan) == []


def test_a_gpu_type_gets_no_estimate_from_this_machines_cpus_and_says_why(capsys, example_dir):
    plan = plan_json(
        capsys, example_dir / "input", *CSV, "--model", example_dir / "model",
        "--instance-type", "ml.g5.xlarge", "--sample-records", "500",
    )  # fmt: skip
    assert plan["calibration"]["rows_per_second"] > 0  # measured here, but not scaled to a GPU
    assert plan["estimate"] is None
    (warning,) = [w for w in plan["warnings"] if w["code"] == "gpu-not-measured"]
    assert warning["message"].startswith("ml.g5.xlarge has 1 GPU (NVIDIA A10G): a speed")
    assert "pass --throughput" in warning["message"]


def test_a_throughput_measured_on_the_instance_type_is_its_speed_unscaled(capsys, example_dir):
    plan = plan_json(
        capsys, example_dir / "input", *CSV, "--instance-type", "ml.g5.xlarge",
        "--instance-count", "2", "--shards", "2", "--throughput", "1500",
    )  # fmt: skip
    estimate = plan["estimate"]
    assert estimate["rows_per_second_per_instance"] == 1500
    assert estimate["job_seconds"] == pytest.approx(EXAMPLE_ROWS / 2 / 1500)
    assert estimate["usd_per_hour"] == table_price("ml.g5.xlarge", "us-east-1")
    assert estimate["assumptions"][0] == (
        "one ml.g5.xlarge instance is as fast as --throughput 1,500 rows/s, measured on "
        "ml.g5.xlarge"
    )
    assert "gpu-not-measured" not in codes(plan)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--throughput", "0"], "--throughput: 0.0 must be above 0 rows/s"),
        (["--throughput", "10", "--split-type", "None"], "--throughput: needs --split-type Line"),
    ],
)
def test_a_throughput_that_cannot_be_used_is_refused(capsys, example_dir, options, named):
    split = [] if "--split-type" in options else ["--split-type", "Line"]
    code, printed = run_cli(
        capsys, "plan", str(example_dir / "input"), "--content-type", "text/csv", *split, *options
    )
    assert code == 2 and named in printed, printed


def test_the_human_plan_states_its_cost_and_its_assumptions(capsys, example_dir):
    code, printed = run_cli(
        capsys, "plan", str(example_dir / "input"), *CSV, "--model", str(example_dir / "model")
    )
    assert code == 0, printed
    assert "rows/s" in printed and "instance-hours" in printed
    assert "CPUs busy" in printed and "as of" in printed


def test_shards_are_the_ones_split_makes(capsys, tmp_path, example_dir):
    source = example_dir / "input" / "data.csv"
    plan = plan_json(capsys, source, *CSV, "--shards", "5")
    index = split(str(source), str(tmp_path / "shards"), shards=5)
    assert plan["shards"] == len(index.shards) == 5
    size = plan_json(capsys, source, *CSV, "--shard-size", "100KB")["shards"]
    assert size == len(split(str(source), str(tmp_path / "by-size"), shard_size=100_000).shards)


def test_a_record_over_max_payload_is_named_with_its_file_and_number(capsys, tmp_path):
    data = tmp_path / "in" / "wide.csv"
    data.parent.mkdir()
    data.write_bytes(b"1,2\n" * 3 + b"9" * (1024 * 1024 + 10) + b"\n" + b"3,4\n")
    plan = plan_json(capsys, data.parent, *CSV, "--max-payload-mb", "1")
    assert plan["largest_record"] == {
        "file": "wide.csv",
        "record": 4,
        "bytes": 1024 * 1024 + 11,
        "max_payload_bytes": 1024 * 1024,
        "fits": False,
    }
    [warning] = plan["warnings"]
    assert warning["code"] == "record-too-large"
    assert "wide.csv: record 4" in warning["message"]
    assert "--split-type Line" not in warning["message"]


def test_a_whole_object_over_max_payload_suggests_split_type_line(capsys, tmp_path):
    data = tmp_path / "big.csv"
    data.write_bytes(b"1,2\n" * 400_000)
    code, printed = run_cli(
        capsys, "plan", str(data), "--content-type", "text/csv", "--max-payload-mb", "1"
    )
    assert code == 0, printed
    assert "big.csv: record 1" in printed and "--split-type Line" in printed.replace("\n", " ")


def test_gzip_input_without_compression_type_is_flagged_and_with_it_counted_decompressed(
    capsys, tmp_path
):
    data = tmp_path / "in" / "part.csv.gz"
    data.parent.mkdir()
    data.write_bytes(gzip.compress(b"1,2\n" * 1000))
    plan = plan_json(capsys, data, *CSV)
    assert codes(plan) == ["gzip-without-compression-type"]
    assert "part.csv.gz" in plan["warnings"][0]["message"]
    assert "--compression-type Gzip" in plan["warnings"][0]["message"]
    plan = plan_json(capsys, data, *CSV, "--compression-type", "Gzip")
    assert codes(plan) == [] and plan["records"] == 1000
    assert plan["files"][0]["data_bytes"] == 4000


def test_merge_without_assemble_with_line_and_idle_instances_are_warned(capsys, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1,2\n3,4\n")
    plan = plan_json(capsys, data, *CSV, "--shards", "2", "--merge", "--instance-count", "4")
    assert codes(plan) == ["merge-needs-line", "idle-instances"]
    assert "--assemble-with Line" in plan["warnings"][0]["message"]
    assert plan["shards"] == 2 and plan["busy_instances"] == 2


def test_an_unknown_instance_type_is_refused_naming_the_nearest(capsys, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1,2\n")
    code, printed = run_cli(capsys, "plan", str(data), "--instance-type", "ml.m5.xlargee")
    assert code == 2
    assert "'ml.m5.xlargee'" in printed and "ml.m5.xlarge" in printed.split("nearest")[1]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--shards", "2", "--shard-size", "1MiB"], "--shard-size"),
        (["--shard-size", "lots"], "--shard-size"),
        (["--price", "ml.m5.xlarge"], "--price"),
        (["--engine", "batch"], "--engine"),
        (["--max-payload-mb", "101"], "max_payload_mb"),
        (["--instance-count", "0"], "instance_count"),
        (["--sample-records", "0"], "--sample-records"),
    ],
)
def test_bad_options_exit_2_naming_the_option(capsys, tmp_path, options, named):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1,2\n")
    code, printed = run_cli(capsys, "plan", str(data), *options)
    assert code == 2 and named in printed


def test_a_region_without_prices_asks_for_one(capsys, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1,2\n")
    plan = plan_json(capsys, data, "--region", "ap-south-2")
    assert codes(plan) == ["no-price"]
    assert "--price ml.m5.xlarge=USD_PER_HOUR" in plan["warnings"][0]["message"]


def test_a_missing_model_is_named_before_any_input_is_read(capsys, tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b"1,2\n")
    code, printed = run_cli(capsys, "plan", str(data), "--model", str(tmp_path / "nope"))
    assert code == 3 and "--model" in printed and "nope" in printed


def test_skip_blank_lines_counts_records_as_run_frames_them_r6(capsys, tmp_path):
    """Empty lines are records, unless --skip-blank-lines drops them; the largest record is
    numbered as the run numbers it then."""
    data = tmp_path / "in" / "a.csv"
    data.parent.mkdir()
    data.write_bytes(b"1,2\n\n\r\n3,4,5,6\n\n")
    assert plan_json(capsys, data.parent, *CSV)["records"] == 5
    plan = plan_json(capsys, data.parent, *CSV, "--skip-blank-lines")
    assert plan["records"] == 2 and plan["largest_record"]["record"] == 2
    code, printed = run_cli(capsys, "plan", str(data), "--split-type", "None", "--skip-blank-lines")
    assert code == 2 and "--skip-blank-lines: needs --split-type Line" in printed


def test_plan_takes_the_inputs_run_takes_r4(capsys, tmp_path):
    """Hidden and _-prefixed files are left out; --include and --exclude select the rest."""
    for name in ("a.csv", "b.json", "day2/c.csv", "_SUCCESS", ".a.csv.crc", "_temporary/d.csv"):
        (tmp_path / "in" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "in" / name).write_bytes(b"1,2\n")
    plan = plan_json(capsys, tmp_path / "in", *CSV)
    assert [f["name"] for f in plan["files"]] == ["a.csv", "b.json", "day2/c.csv"]
    plan = plan_json(
        capsys, tmp_path / "in", *CSV, "--include", "*.csv", "--include", "*.json",
        "--exclude", "day2/*",
    )  # fmt: skip
    assert [f["name"] for f in plan["files"]] == ["a.csv", "b.json"]
