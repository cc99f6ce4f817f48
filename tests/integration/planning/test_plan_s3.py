"""``batchinfer plan`` of an s3:// prefix: the objects a run would take, their sizes and
shards (from ranged reads around each cut), without reading the data."""

import json

import boto3
import pytest
from moto import mock_aws

from tests.support.cli import run_cli

CSV = ["--content-type", "text/csv", "--split-type", "Line"]


@pytest.fixture
def bucket(monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_REGION", raising=False)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="data")
        yield s3


def test_an_s3_prefix_is_listed_and_its_objects_planned_into_shards(capsys, bucket, tmp_path):
    rows = b"".join(b"%06d,%s\n" % (i, b"x" * 30) for i in range(20_000))
    bucket.put_object(Bucket="data", Key="input/day/a.csv", Body=rows)
    bucket.put_object(Bucket="data", Key="input/day/sub/b.csv.gz", Body=b"\x1f\x8b...")
    bucket.put_object(Bucket="data", Key="input/day/folder/", Body=b"")  # a console's marker
    code, printed = run_cli(
        capsys, "plan", "s3://data/input/day/", *CSV, "--shards", "3", "--model", str(tmp_path),
        "--json",
    )  # fmt: skip
    assert code == 0, printed
    plan = json.loads(printed)
    files = {f["name"]: f for f in plan["files"]}
    assert set(files) == {"a.csv", "sub/b.csv.gz"}
    assert files["a.csv"]["bytes"] == len(rows) and files["a.csv"]["records"] is None
    assert (files["a.csv"]["shards"], files["sub/b.csv.gz"]["shards"]) == (3, 3)
    assert plan["objects"] == 2 and plan["shards"] == 6 and plan["calibration"] is None
    assert [w["code"] for w in plan["warnings"]] == [
        "not-calibrated",
        "gzip-without-compression-type",
    ]


def test_an_empty_prefix_is_an_input_error_naming_it(capsys, bucket):
    code, printed = run_cli(capsys, "plan", "s3://data/input/none/", *CSV)
    assert code == 3 and "s3://data/input/none/" in printed


def test_local_and_s3_inputs_cannot_be_mixed(capsys, bucket, tmp_path):
    (tmp_path / "a.csv").write_bytes(b"1\n")
    code, printed = run_cli(capsys, "plan", str(tmp_path / "a.csv"), "s3://data/input/", *CSV)
    assert code == 2 and "INPUT" in printed


def test_with_header_an_objects_header_line_is_not_cut_as_data(capsys, bucket):
    """A long header and one short record: two shards of its bytes, one of its data."""
    bucket.put_object(Bucket="data", Key="input/h.csv", Body=b"h" * 100 + b"\n1\n")
    shards = []
    for header in ([], ["--header"]):
        code, printed = run_cli(
            capsys, "plan", "s3://data/input/", *CSV, "--shards", "2", "--json", *header
        )
        assert code == 0, printed
        shards.append(json.loads(printed)["shards"])
    assert shards == [2, 1]


def test_an_s3_prefix_leaves_out_stray_keys_and_takes_include_and_exclude_r4(capsys, bucket):
    for key in ("a.csv", "b.csv", "x.json", "_SUCCESS", ".a.csv.crc", "_temporary/0/c.csv"):
        bucket.put_object(Bucket="data", Key=f"input/day/{key}", Body=b"1,2\n")
    code, printed = run_cli(
        capsys, "plan", "s3://data/input/day/", *CSV, "--exclude", "b*", "--json"
    )
    assert code == 0, printed
    assert [f["name"] for f in json.loads(printed)["files"]] == ["a.csv", "x.json"]
    code, printed = run_cli(capsys, "plan", "s3://data/input/day/", *CSV, "--include", "*.txt")
    assert code == 3, printed
    assert "no objects under s3://data/input/day/: 3 objects (a.csv, b.csv, x.json) not " in (
        " ".join(printed.split())
    )


def test_a_manifest_file_of_s3_objects_is_planned_as_run_takes_it_r4(capsys, bucket, tmp_path):
    for key in ("a.csv", "_tmp/b.csv", "c.csv"):
        bucket.put_object(Bucket="data", Key=f"input/{key}", Body=b"1,2\n")
    manifest = tmp_path / "inputs.manifest"
    manifest.write_text(json.dumps([{"prefix": "s3://data/input"}, "_tmp/b.csv", "a.csv"]))
    code, printed = run_cli(capsys, "plan", str(manifest), *CSV, "--json")
    assert code == 0, printed
    assert [f["name"] for f in json.loads(printed)["files"]] == ["_tmp/b.csv", "a.csv"]
    manifest.write_text(json.dumps([{"prefix": "s3://data/input/"}, "gone.csv"]))
    code, printed = run_cli(capsys, "plan", str(manifest), *CSV)
    assert code == 3 and "no object s3://data/input/gone.csv" in printed, printed


def test_an_s3_plan_without_credentials_is_one_line_and_exit_5(capsys, monkeypatch):
    """No credentials anywhere: the documented one-line message and its exit code, as
    submit gives it, not botocore's traceback."""
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # A new process's session: not one an earlier test of this worker gave credentials.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    code, printed = run_cli(capsys, "plan", "s3://data/input/", *CSV)
    assert code == 5, printed
    assert "AWS credentials: Unable to locate credentials" in printed
    assert "Traceback" not in printed
