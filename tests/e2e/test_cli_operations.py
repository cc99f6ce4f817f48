"""``batchinfer submit``/``status``/``runs`` against the offline stack: a CloudFormation
stack carrying the synthesized template's outputs, the run executed by the synthesized
state machine."""

import json

import pytest

from batchinfer.pipeline.contract import stack_outputs
from tests.support.aws import create_output_stack
from tests.support.cli import run_cli
from tests.support.offline import REGION

from .test_happy_path import csv_rows


def test_submit_then_status_and_runs_through_the_stack_outputs(
    stack, capsys, monkeypatch, row_sum_model_dir, tmp_path
):
    """Submitted with a throughput measured on a local sample: the run's status shows Plan's
    estimate beside what the run took."""
    monkeypatch.setenv("COLUMNS", "200")
    assert set(stack_outputs.ALL) == set(stack.outputs), "the CLI reads these output keys"
    create_output_stack(stack.name, stack.outputs, REGION)
    data = csv_rows(25)
    stack.put("input/cli/a.csv", data)
    (tmp_path / "sample.csv").write_bytes(data)

    with stack.audit.as_cli():
        code, out = run_cli(
            capsys, "submit", "--stack", stack.name, "--input", f"s3://{stack.bucket}/input/cli/",
            "--run-id", "from-cli", "--shards", "2", "--content-type", "text/csv",
            "--accept", "text/csv", "--split-type", "Line",
            "--estimate-model", str(row_sum_model_dir), "--estimate-sample", str(tmp_path),
        )  # fmt: skip
    assert code == 0, out
    printed = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    assert printed["run id"].strip() == "from-cli"
    execution = stack.wait(printed["execution"].strip())
    assert execution.status == "SUCCEEDED", execution.cause

    with stack.audit.as_cli():
        code, out = run_cli(capsys, "status", "from-cli", "--stack", stack.name, "--watch")
    assert code == 0, out
    assert "SUCCEEDED" in out and "2/2" in out and "25 / 25" in out
    assert "a.part-00000.csv" in out and "a.part-00001.csv" in out
    assert "estimate and actual" in out
    with stack.audit.as_cli():
        code, out = run_cli(capsys, "status", "from-cli", "--stack", stack.name, "--json")
    assert code == 0, out
    document = json.loads(out)
    estimate, taken = document["run"]["estimate"], document["actual"]
    assert (estimate["objects"], estimate["bytes"], estimate["shards"]) == (1, len(data), 2)
    assert estimate["shards"] == taken["shards"] and estimate["jobs"] == 1
    assert estimate["instance_type"] == taken["instance_type"]
    assert estimate["basis"] == "bytes" and estimate["job_seconds"] > 0
    assert estimate["cost_usd"] == pytest.approx(
        estimate["instance_hours"] * estimate["usd_per_hour"], rel=1e-4
    )
    assert taken["finished"] and taken["records_out"] == 25
    with stack.audit.as_cli():
        code, out = run_cli(capsys, "runs", "--stack", stack.name, "--status", "SUCCEEDED")
    assert code == 0 and "from-cli" in out
