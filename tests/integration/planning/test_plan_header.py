"""``batchinfer plan --header``: a header row is no record (not counted, not the largest, never
sampled), its names reach the model server that calibrates, and the inputs share one header."""

from batchinfer.sharding import split
from tests.integration.planning.test_plan_cli import CSV, codes, plan_json
from tests.support.cli import run_cli
from tests.support.frames import COLUMNS, frame, write_csv

ROWS = 300


def test_the_header_row_is_no_record_nor_the_largest_and_shards_are_the_ones_split_makes(
    capsys, tmp_path
):
    data = tmp_path / "data.csv"
    data.write_bytes(b"a_long_column_name,another_long_name\n" + b"1,2\n" * 99 + b"33,44\n")
    plain = plan_json(capsys, data, *CSV)
    assert (plain["header"], plain["records"], plain["largest_record"]["record"]) == (False, 101, 1)
    plan = plan_json(capsys, data, *CSV, "--header", "--shards", "3")
    assert (plan["header"], plan["records"]) == (True, 100)
    assert plan["files"][0]["data_bytes"] == 99 * 4 + 6
    assert (plan["largest_record"]["record"], plan["largest_record"]["bytes"]) == (100, 6)
    index = split(str(data), str(tmp_path / "shards"), shards=3, header=True)
    assert plan["shards"] == len(index.shards) == 3


def test_a_model_fitted_on_a_dataframe_calibrates_on_headed_csv(capsys, tmp_path, frame_model):
    data = write_csv(tmp_path / "data.csv", frame(ROWS))
    plan = plan_json(capsys, data, *CSV, "--header", "--model", frame_model)
    calibration = plan["calibration"]
    assert plan["records"] == calibration["records"] == ROWS  # the whole input, not its header
    assert isinstance(calibration["rows_per_second"], float) and calibration["rows_per_second"] > 0
    assert plan["warnings"] == []


def test_without_header_the_header_row_is_a_record_the_model_fails_on_and_plan_says_so(
    capsys, tmp_path, frame_model
):
    data = write_csv(tmp_path / "data.csv", frame(ROWS))
    plan = plan_json(capsys, data, *CSV, "--model", frame_model)
    assert plan["records"] == ROWS + 1 and plan["calibration"] is None
    assert codes(plan) == ["calibration-failed"]
    assert "it is a header row; pass --header" in plan["warnings"][0]["message"]


def test_whole_objects_are_sent_without_their_header(capsys, tmp_path, frame_model):
    """SplitType None: each object is one request, its header dropped as the job's split
    drops it."""
    data = write_csv(tmp_path / "data.csv", frame(ROWS))
    options = ["--content-type", "text/csv", "--header", "--model", str(frame_model)]
    plan = plan_json(capsys, data, *options)
    header = len(",".join(COLUMNS)) + 1
    assert plan["calibration"]["bytes"] == data.stat().st_size - header
    assert plan["warnings"] == []


def test_tune_measures_every_fitting_pair_with_the_columns_named_by_the_header(
    capsys, tmp_path, frame_model
):
    """The file's columns are in another order than the model's: they are found by name."""
    data = write_csv(tmp_path / "data.csv", frame(ROWS)[["weight", "color", "size"]])
    plan = plan_json(capsys, data, *CSV, "--header", "--model", frame_model, "--tune")
    points = [p for p in plan["tune"]["points"] if p["fits"]]
    assert points and all(p["rows_per_second"] > 0 for p in points)
    assert plan["tune"]["recommended"] is not None


def test_an_input_with_another_header_is_refused_naming_it(capsys, tmp_path):
    write_csv(tmp_path / "in" / "a.csv", frame(10))
    write_csv(tmp_path / "in" / "b.csv", frame(10)[["size", "color", "weight"]])
    code, printed = run_cli(capsys, "plan", str(tmp_path / "in"), *CSV, "--header")
    assert code == 3, printed
    b = tmp_path / "in" / "b.csv"
    assert f"{b}: header column 1 is 'size'" in printed and "share one header" in printed


def test_header_is_for_csv_input(capsys, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_bytes(b"[1,2]\n")
    code, printed = run_cli(
        capsys, "plan", str(data), "--content-type", "application/jsonlines", "--header"
    )
    assert code == 2 and "--header is for text/csv input" in printed
