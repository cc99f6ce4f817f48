"""``batchinfer submit``/``status``/``runs`` against the offline stack: a CloudFormation
stack carrying the synthesized template's outputs, the run executed by the synthesized
state machine."""

from batchinfer.pipeline import stack_outputs
from tests.support.aws import create_output_stack
from tests.support.cli import run_cli
from tests.support.offline import REGION

from .test_happy_path import csv_rows


def test_submit_then_status_and_runs_through_the_stack_outputs(stack, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert set(stack_outputs.ALL) == set(stack.outputs), "the CLI reads these output keys"
    create_output_stack(stack.name, stack.outputs, REGION)
    stack.put("input/cli/a.csv", csv_rows(25))

    with stack.audit.as_cli():
        code, out = run_cli(
            capsys, "submit", "--stack", stack.name, "--input", f"s3://{stack.bucket}/input/cli/",
            "--run-id", "from-cli", "--shards", "2",
        )  # fmt: skip
    assert code == 0, out
    printed = dict(line.split(":", 1) for line in out.splitlines())
    assert printed["run id"].strip() == "from-cli"
    execution = stack.wait(printed["execution"].strip())
    assert execution.status == "SUCCEEDED", execution.cause

    with stack.audit.as_cli():
        code, out = run_cli(capsys, "status", "from-cli", "--stack", stack.name, "--watch")
    assert code == 0, out
    assert "SUCCEEDED" in out and "2/2" in out and "25 / 25" in out
    assert "a.part-00000.csv" in out and "a.part-00001.csv" in out
    with stack.audit.as_cli():
        code, out = run_cli(capsys, "runs", "--stack", stack.name, "--status", "SUCCEEDED")
    assert code == 0 and "from-cli" in out
