"""``batchinfer submit``, ``status`` and ``runs`` against moto: resources from the stack's
outputs (DescribeStacks), requests in the state machine's snake_case keys, errors that name
the stack, output key or run at fault."""

import json
from dataclasses import dataclass
from typing import Any

import pytest

from batchinfer.cloud.runs import RUN_KEYS, SHARD_KEYS
from batchinfer.commands.transform_options import option_name
from batchinfer.pipeline import stack_outputs
from batchinfer.pipeline.status_table import FAILED, MISSING, RUNNING, SUCCEEDED
from batchinfer.transform.settings import PASCAL
from tests.support.aws import create_output_stack
from tests.support.cli import run_cli

from .conftest import REGION, STACK

EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:test-runs:"


@dataclass
class Result:
    exit_code: int
    output: str


@pytest.fixture
def invoke(capsys, monkeypatch):
    """Run ``batchinfer ARGS`` in this process (moto is in-process)."""
    monkeypatch.setenv("COLUMNS", "200")
    return lambda *args: Result(*run_cli(capsys, *args))


def test_submit_starts_an_execution_named_by_the_run_id_with_snake_case_keys(invoke, deployed):
    result = invoke(
        "submit",
        "--stack",
        STACK,
        "--input",
        "s3://test-data/input/daily/",
        "--run-id",
        "daily-1",
        "--shards",
        "4",
        "--merge",
        "--instance-count",
        "2",
        "--content-type",
        "text/csv",
        "--env",
        "MODE=fast",
    )
    assert result.exit_code == 0, result.output
    assert "daily-1" in result.output
    arn = f"{EXECUTION}daily-1"
    assert "https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1" in (
        result.output
    )
    assert arn in result.output
    described = deployed.sfn.describe_execution(executionArn=arn)
    assert described["stateMachineArn"] == deployed.state_machine_arn
    assert json.loads(described["input"]) == {
        "input": "s3://test-data/input/daily/",
        "run_id": "daily-1",
        "shards": 4,
        "merge": True,
        "instance_count": 2,
        "content_type": "text/csv",
        "environment": {"MODE": "fast"},
    }


# A valid value for every transform setting.
EVERY_SETTING: dict[str, Any] = {
    "content_type": "application/jsonlines",
    "accept": "application/jsonlines",
    "split_type": "Line",
    "batch_strategy": "SingleRecord",
    "max_payload_mb": 2,
    "max_concurrent_transforms": 3,
    "instance_count": 4,
    "instance_type": "ml.c5.xlarge",
    "assemble_with": "Line",
    "join_source": "Input",
    "input_filter": "$.features",
    "output_filter": "$.score",
    "compression_type": "Gzip",
    "invocations_timeout_seconds": 120,
    "invocations_max_retries": 1,
    "environment": {"MODE": "fast", "LEVEL": "2"},
}


def test_submit_puts_every_transform_option_given_in_the_request_under_its_settings_key(
    invoke, deployed
):
    assert set(EVERY_SETTING) == set(PASCAL)
    args = []
    for key, value in EVERY_SETTING.items():
        if key == "environment":
            for name, text in value.items():
                args += [option_name(key), f"{name}={text}"]
        else:
            args += [option_name(key), str(value)]
    given = ("--input", "s3://test-data/input/all/", "--run-id", "all")
    result = invoke("submit", "--stack", STACK, *given, *args)
    assert result.exit_code == 0, result.output
    described = deployed.sfn.describe_execution(executionArn=f"{EXECUTION}all")
    request = json.loads(described["input"])
    assert request == {"input": "s3://test-data/input/all/", "run_id": "all", **EVERY_SETTING}


def test_submit_without_run_id_names_the_execution_with_a_new_one(invoke, deployed, monkeypatch):
    monkeypatch.setenv("BATCHINFER_STACK", STACK)
    result = invoke("submit", "--input", "s3://test-data/input/x/")
    assert result.exit_code == 0, result.output
    run_id = result.output.split("run id:")[1].split()[0]
    assert run_id.startswith("run-")
    described = deployed.sfn.describe_execution(executionArn=f"{EXECUTION}{run_id}")
    assert json.loads(described["input"]) == {"input": "s3://test-data/input/x/"}


def test_submit_errors_name_the_stack_the_output_key_and_the_uri(invoke, deployed):
    missing = invoke("submit", "--stack", "no-such-stack", "--input", "s3://b/input/")
    assert missing.exit_code == 7 and "stack no-such-stack" in missing.output
    create_output_stack("half-stack", {stack_outputs.TABLE_NAME: "test-runs"}, REGION)
    half = invoke("submit", "--stack", "half-stack", "--input", "s3://b/input/")
    assert half.exit_code == 1
    assert "half-stack" in half.output and stack_outputs.STATE_MACHINE_ARN in half.output
    bad = invoke("submit", "--stack", STACK, "--input", "/local/path")
    assert bad.exit_code == 2 and "--input" in bad.output
    spaced = invoke(
        "submit", "--stack", STACK, "--input", "s3://test-data/input/", "--run-id", "a b"
    )
    assert spaced.exit_code == 2 and "run_id: 'a b' is not allowed" in spaced.output
    assert _executions(deployed) == []


def _executions(deployed) -> list[dict[str, Any]]:
    return deployed.sfn.list_executions(stateMachineArn=deployed.state_machine_arn)["executions"]


def test_submit_dry_run_prints_the_request_and_the_state_machine_and_starts_nothing(
    invoke, deployed
):
    result = invoke(
        "submit",
        "--stack",
        STACK,
        "--input",
        "s3://test-data/input/daily/",
        "--output",
        "s3://test-data/output/daily/",
        "--run-id",
        "daily-2",
        "--batch-strategy",
        "single_record",
        "--join-source",
        "Input",  # with the content type the stack's defaults give: the Plan checks that
        "--dry-run",
    )
    assert result.exit_code == 0, result.output
    printed, end = json.JSONDecoder().raw_decode(result.output)
    assert printed == {
        "state_machine_arn": deployed.state_machine_arn,
        "request": {
            "input": "s3://test-data/input/daily/",
            "output": "s3://test-data/output/daily/",
            "run_id": "daily-2",
            "batch_strategy": "single_record",
            "join_source": "Input",
        },
    }
    assert "dry run: nothing started" in result.output[end:]
    assert _executions(deployed) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--input", "data/x.csv"], "'data/x.csv' is not an S3 URI"),
        (["--assemble-with", "Lines"], "'Lines' is not allowed; did you mean 'Line'?"),
        (["--max-payload-mb", "60", "--max-concurrent-transforms", "2"], "allowed: at most 100"),
        (["--engine", "emr"], "engine: 'emr' is not allowed"),
        (["--run-id", "a:b"], "run_id: 'a:b' is not allowed"),
    ],
)
def test_submit_refuses_what_the_plan_would_refuse_before_starting_exit_2(
    invoke, deployed, options, message
):
    for dry_run in ([], ["--dry-run"]):
        args = ["--input", "s3://test-data/input/x/", *options, *dry_run]
        result = invoke("submit", "--stack", STACK, *args)
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
    assert _executions(deployed) == []


def test_submit_dry_run_needs_the_stack(invoke, deployed):
    result = invoke("submit", "--stack", "gone", "--input", "s3://test-data/input/", "--dry-run")
    assert result.exit_code == 7 and "stack gone: does not exist" in result.output


def _record_run(deployed, run_id: str, status: str, **attributes) -> None:
    deployed.table.create_run(run_id, EXECUTION + run_id, input="s3://test-data/input/x/")
    deployed.table.update_run(run_id, EXECUTION + run_id, {"run_status": status, **attributes})


def test_status_shows_the_run_and_its_shards(invoke, deployed):
    _record_run(
        deployed,
        "r1",
        FAILED,
        shards=2,
        shards_done=1,
        error="ShardsMissing",
        cause="1 of 2 shards have no valid output",
        failed_shards=["b.csv"],
    )
    done = {"name": "a.csv", "status": SUCCEEDED, "attempts": 1, "job_name": "bi-r1-j"}
    deployed.table.put_shard("r1", 0, done | {"records_in": 7, "records_out": 7})
    lost = {"name": "b.csv", "status": MISSING, "attempts": 3, "reason": "no output"}
    deployed.table.put_shard("r1", 1, lost)
    result = invoke("status", "r1", "--stack", STACK)
    assert result.exit_code == 0, result.output
    for text in ("FAILED", "ShardsMissing", "1/2", "a.csv", "b.csv", "MISSING", "bi-r1-j"):
        assert text in result.output
    unknown = invoke("status", "nope", "--stack", STACK)
    assert unknown.exit_code == 1
    assert "run nope" in unknown.output and "test-runs" in unknown.output


def test_status_watch_refreshes_until_the_run_ends(invoke, deployed, monkeypatch):
    _record_run(deployed, "w1", RUNNING, shards=1, shards_done=0)
    slept = []

    def finish_while_sleeping(seconds: float) -> None:
        slept.append(seconds)
        ended = {"run_status": SUCCEEDED, "shards_done": 1, "records_out": 5}
        deployed.table.update_run("w1", EXECUTION + "w1", ended)

    monkeypatch.setattr("batchinfer.cloud.runs.time.sleep", finish_while_sleeping)
    result = invoke("status", "w1", "--stack", STACK, "--watch", "--interval", "0.5")
    assert result.exit_code == 0, result.output
    assert slept == [0.5]
    assert "SUCCEEDED" in result.output and "1/1" in result.output


def test_runs_lists_newest_first_and_filters_by_status(invoke, deployed):
    _record_run(deployed, "old", SUCCEEDED, started_at="2024-01-01T00:00:00+00:00")
    _record_run(deployed, "new", FAILED, started_at="2024-02-01T00:00:00+00:00", error="X")
    _record_run(deployed, "now", RUNNING, started_at="2024-03-01T00:00:00+00:00")
    everything = invoke("runs", "--stack", STACK)
    assert everything.exit_code == 0, everything.output
    out = everything.output
    assert out.index("now") < out.index("new") < out.index("old")
    failed = invoke("runs", "--stack", STACK, "--status", "failed")
    assert "new" in failed.output and "old" not in failed.output
    bad = invoke("runs", "--stack", STACK, "--status", "DONE")
    assert bad.exit_code == 2 and "--status" in bad.output


def test_status_json_has_every_run_and_shard_key_with_numbers_as_numbers(invoke, deployed):
    _record_run(deployed, "j1", FAILED, shards=2, shards_done=1, failed_shards=["b.csv"])
    deployed.table.put_shard("j1", 0, {"name": "a.csv", "status": SUCCEEDED, "records_out": 7})
    deployed.table.put_shard("j1", 1, {"name": "b.csv", "status": MISSING, "reason": "lost"})
    result = invoke("status", "j1", "--stack", STACK, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert set(document) == {"run", "shards"}
    run = document["run"]
    assert tuple(run) == RUN_KEYS
    assert run["run_id"] == "j1" and run["run_status"] == FAILED
    assert run["shards"] == 2 and run["shards_done"] == 1 and run["finished_at"] is None
    assert run["failed_shards"] == ["b.csv"] and run["input"] == "s3://test-data/input/x/"
    assert [tuple(shard) for shard in document["shards"]] == [SHARD_KEYS, SHARD_KEYS]
    first, second = document["shards"]
    assert (first["shard"], first["records_out"], first["reason"]) == (0, 7, None)
    assert (second["shard"], second["status"], second["reason"]) == (1, MISSING, "lost")


def test_status_json_with_watch_prints_one_object_per_refresh(invoke, deployed, monkeypatch):
    _record_run(deployed, "w2", RUNNING, shards=1, shards_done=0)

    def finish(_seconds: float) -> None:
        deployed.table.update_run("w2", EXECUTION + "w2", {"run_status": SUCCEEDED})

    monkeypatch.setattr("batchinfer.cloud.runs.time.sleep", finish)
    result = invoke("status", "w2", "--stack", STACK, "--watch", "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [line["run"]["run_status"] for line in lines] == [RUNNING, SUCCEEDED]


def test_runs_json_is_a_list_of_runs_newest_first(invoke, deployed):
    _record_run(deployed, "old", SUCCEEDED, started_at="2024-01-01T00:00:00+00:00", records_out=5)
    _record_run(deployed, "new", FAILED, started_at="2024-02-01T00:00:00+00:00", error="X")
    result = invoke("runs", "--stack", STACK, "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert [run["run_id"] for run in found] == ["new", "old"]
    assert all(tuple(run) == RUN_KEYS for run in found)
    assert found[0]["error"] == "X" and found[1]["records_out"] == 5
    assert (
        json.loads(invoke("runs", "--stack", STACK, "--status", "ABORTED", "--json").output) == []
    )


def test_submit_names_the_endpoint_of_an_endpoint_run_and_refuses_it_elsewhere(invoke, deployed):
    common = ("submit", "--stack", STACK, "--input", "s3://test-data/input/daily/", "--dry-run")
    result = invoke(*common, "--engine", "endpoint", "--endpoint", "row-sum")
    assert result.exit_code == 0, result.output
    printed, _ = json.JSONDecoder().raw_decode(result.output)
    assert printed["request"] == {
        "input": "s3://test-data/input/daily/",
        "engine": "endpoint",
        "endpoint": "row-sum",
    }
    refused = invoke(*common, "--engine", "processing", "--endpoint", "row-sum")
    assert refused.exit_code == 2
    assert "endpoint: only with engine endpoint, not engine 'processing'" in refused.output
