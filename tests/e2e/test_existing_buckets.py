"""The shipped prod example through the synthesized state machine: its schedules' inputs,
taken from the template as EventBridge Scheduler would send them, pass Plan and run; one
reads the stack's own bucket (named by reference, its name generated), the other reads an
existing data-lake bucket and writes its merged outputs to another team's bucket."""

import json
from typing import Any

import pytest

from batchinfer.pipeline.storage.status_table import SUCCEEDED, StatusTable
from tests.support.offline import REGION, OfflineStack

from .test_happy_path import csv_rows


def schedule_inputs(stack: OfflineStack) -> dict[str, dict[str, Any]]:
    """Each schedule's target input, rendered as the deployed schedule would send it."""
    return {
        props["Description"].rsplit(" ", 1)[-1]: json.loads(stack._render(props["Target"]["Input"]))
        for props in (r["Properties"] for r in stack.of_type("AWS::Scheduler::Schedule").values())
    }


LAKE_KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def create_bucket(stack: OfflineStack, name: str, key: str | None = None) -> None:
    """An existing bucket, encrypted by default with ``key`` when given."""
    stack.s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
    if key:
        stack.s3.put_bucket_encryption(
            Bucket=name,
            ServerSideEncryptionConfiguration={
                "Rules": [
                    {
                        "ApplyServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": key,
                        }
                    }
                ]
            },
        )


def test_the_nightly_schedule_reads_the_stacks_bucket(prod_stack):
    request = schedule_inputs(prod_stack)["nightly-scoring"]
    assert request == {"input": f"s3://{prod_stack.bucket}/input/nightly/", "merge": True}
    prod_stack.put("input/nightly/scores.csv", csv_rows(50))
    execution = prod_stack.run(request, "nightly-1")
    assert execution.status == "SUCCEEDED", execution.cause
    run = StatusTable.named(prod_stack.table_name).get_run("nightly-1")
    assert run["run_status"] == SUCCEEDED and run["records_out"] == 50


def test_the_weekly_schedule_reads_a_data_lake_and_writes_another_bucket(prod_stack):
    request = schedule_inputs(prod_stack)["weekly-lake"]
    assert request == {
        "input": "s3://example-data-lake/scoring/weekly/",
        "output": "s3://example-reports/batchinfer/weekly/",
        "merge": True,
    }
    create_bucket(prod_stack, "example-data-lake", LAKE_KEY)
    create_bucket(prod_stack, "example-reports")
    rows = {"a.csv": csv_rows(120), "region/b.csv": csv_rows(30, offset=7)}
    for name, data in rows.items():
        prod_stack.s3.put_object(
            Bucket="example-data-lake", Key=f"scoring/weekly/{name}", Body=data
        )
    execution = prod_stack.run(request, "weekly-1")
    assert execution.status == "SUCCEEDED", execution.cause

    (job,) = [request for _, request in prod_stack.jobs.requests]
    assert "KmsKeyId" in job["TransformOutput"], "merged parts stay in the stack's bucket"
    listed = prod_stack.s3.list_objects_v2(Bucket="example-reports", Prefix="batchinfer/")
    keys = sorted(item["Key"] for item in listed["Contents"])
    assert keys == [
        "batchinfer/weekly/_SUCCESS",
        "batchinfer/weekly/_manifest.json",
        "batchinfer/weekly/a.csv.out",
        "batchinfer/weekly/region/b.csv.out",
    ]
    merged = prod_stack.get("s3://example-reports/batchinfer/weekly/a.csv.out")
    assert merged.count(b"\n") == 120
    run = StatusTable.named(prod_stack.table_name).get_run("weekly-1")
    assert run["run_status"] == SUCCEEDED and run["records_out"] == 150
    assert run["input"] == request["input"]
    assert not prod_stack.keys("output/"), "nothing lands in the stack's own output/"


def test_shard_outputs_land_in_another_teams_bucket_unmerged(prod_stack):
    """Without merge the jobs write to the destination themselves and Verify reads there."""
    create_bucket(prod_stack, "example-data-lake", LAKE_KEY)
    create_bucket(prod_stack, "example-reports")
    prod_stack.s3.put_object(
        Bucket="example-data-lake", Key="scoring/daily/a.csv", Body=csv_rows(40)
    )
    request = {
        "input": "s3://example-data-lake/scoring/daily/",
        "output": "s3://example-reports/batchinfer/daily/",
        "shards": 2,
    }
    execution = prod_stack.run(request, "daily-1")
    assert execution.status == "SUCCEEDED", execution.cause
    listed = prod_stack.s3.list_objects_v2(Bucket="example-reports", Prefix="batchinfer/daily/")
    assert sorted(item["Key"] for item in listed["Contents"]) == [
        f"batchinfer/daily/{name}"
        for name in ("_SUCCESS", "_manifest.json", "a.part-00000.csv.out", "a.part-00001.csv.out")
    ]
    run = StatusTable.named(prod_stack.table_name).get_run("daily-1")
    assert run["records_out"] == 40


def test_a_header_run_reads_the_first_lake_objects_header_with_the_lakes_key(prod_stack):
    """Plan reads the first object's header line (R6: the header row is no record) from a
    data lake encrypted with its own key; the jobs get the names, the shards no header."""
    create_bucket(prod_stack, "example-data-lake", LAKE_KEY)
    prod_stack.s3.put_object(
        Bucket="example-data-lake", Key="scoring/named/a.csv", Body=b"x,y,z\n" + csv_rows(40)
    )
    request = {"input": "s3://example-data-lake/scoring/named/", "header": True, "shards": 2}
    execution = prod_stack.run(request, "named-1")
    assert execution.status == "SUCCEEDED", execution.cause
    (_, job), *_ = prod_stack.jobs.requests
    assert job["Environment"]["BATCHINFER_CSV_COLUMNS"] == '["x","y","z"]'
    run = StatusTable.named(prod_stack.table_name).get_run("named-1")
    assert run["records_out"] == 40


@pytest.mark.parametrize(
    ("request_", "allowed"),
    [
        ({"input": "s3://example-data-lake/raw/"}, "s3://example-data-lake/scoring/ (lake)"),
        (
            {"input": "s3://example-data-lake/scoring/x/", "output": "s3://elsewhere/x/"},
            "s3://example-reports/batchinfer/ (reports)",
        ),
    ],
)
def test_places_outside_the_configuration_are_rejected_by_plan(prod_stack, request_, allowed):
    execution = prod_stack.run(request_, "outside")
    assert execution.status == "FAILED"
    assert execution.error == "ValidationError"
    assert "is outside the places this stack's runs may use" in execution.cause
    assert allowed in execution.cause


def test_records_set_aside_are_taken_out_in_another_teams_bucket(prod_stack):
    """bad_records quarantine, unmerged: the jobs write their marked outputs to the
    destination, and CountShard rewrites them there beside their errors files."""
    from tests.integration.local.test_run_bad_records import QUARANTINE, rows

    create_bucket(prod_stack, "example-data-lake", LAKE_KEY)
    create_bucket(prod_stack, "example-reports")
    prod_stack.s3.put_object(
        Bucket="example-data-lake", Key="scoring/quarantine/a.csv", Body=rows(1_000, bad=(7,))
    )
    request = {
        "input": "s3://example-data-lake/scoring/quarantine/",
        "output": "s3://example-reports/batchinfer/quarantine/",
        **QUARANTINE,
    }
    execution = prod_stack.run(request, "quarantine-1")
    assert execution.status == "SUCCEEDED", execution.cause
    prefix = "batchinfer/quarantine/"
    listed = prod_stack.s3.list_objects_v2(Bucket="example-reports", Prefix=prefix)
    assert sorted(item["Key"] for item in listed["Contents"]) == [
        f"{prefix}{name}"
        for name in ("_SUCCESS", "_manifest.json", "a.csv.out", "a.csv.out.errors.jsonl")
    ]
    output = prod_stack.get(f"s3://example-reports/{prefix}a.csv.out")
    assert b"\x00" not in output and output.count(b"\n") == 999
    run = StatusTable.named(prod_stack.table_name).get_run("quarantine-1")
    assert (run["records_out"], run["records_quarantined"]) == (999, 1)
