"""``batchinfer submit``, ``status`` and ``runs`` against moto: resources from the stack's
outputs (DescribeStacks), requests in the state machine's snake_case keys, errors that name
the stack, output key or run at fault."""

import json
from dataclasses import dataclass
from typing import Any

import pytest

from batchinfer.cloud.actuals import ACTUAL_KEYS, actual
from batchinfer.cloud.runs import RUN_KEYS, SHARD_KEYS, as_json
from batchinfer.commands import figures
from batchinfer.commands.transform_options import option_name
from batchinfer.instances.prices import table_price
from batchinfer.pipeline.contract import stack_outputs
from batchinfer.pipeline.jobs.run_estimate import EstimateRequest, ShardTally, run_estimate
from batchinfer.pipeline.jobs.run_request import RunRequest
from batchinfer.pipeline.storage.status_table import FAILED, MISSING, RUNNING, SUCCEEDED
from batchinfer.planning.estimate import Throughput
from batchinfer.transform.settings import PASCAL, TransformSettings
from tests.support.aws import create_output_stack
from tests.support.cli import run_cli
from tests.support.example import write_example

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
    "bad_records": "quarantine",
    "max_bad_records": 7,
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


def test_submit_sends_include_and_exclude_globs_and_leaves_blank_lines_to_run_r4(invoke, deployed):
    """The Plan selects the objects by the request's globs (R4: a key prefix or a
    ManifestFile selects the input objects); SageMaker frames a transform job's records, so
    submit has no --skip-blank-lines."""
    common = ("submit", "--stack", STACK, "--input", "s3://test-data/input/daily/", "--dry-run")
    result = invoke(*common, "--include", "*.csv", "--include", "*.tsv", "--exclude", "old/*")
    assert result.exit_code == 0, result.output
    request = json.JSONDecoder().raw_decode(result.output)[0]["request"]
    assert (request["include"], request["exclude"]) == (["*.csv", "*.tsv"], ["old/*"])
    assert RunRequest.parse(request).selection.matches("a.csv")
    result = invoke(*common, "--skip-blank-lines")
    assert result.exit_code == 2 and "No such option: --skip-blank-lines" in result.output


def test_submit_sends_forward_passes_in_the_models_environment(invoke, deployed):
    result = invoke(
        "submit", "--stack", STACK, "--input", "s3://test-data/input/daily/",
        "--env", "A=1", "--max-batch-records", "512", "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    request = json.JSONDecoder().raw_decode(result.output)[0]["request"]
    assert request["environment"] == {"A": "1", "BATCHINFER_MAX_BATCH_RECORDS": "512"}
    parsed = RunRequest.parse(request).settings["environment"]
    assert parsed["BATCHINFER_MAX_BATCH_RECORDS"] == "512"


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


def test_submit_names_a_settings_typo_before_looking_for_aws(invoke, monkeypatch):
    """A mistake in the request is found before any AWS call: no region, no credentials and
    no stack are needed to be told of it."""
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    args = ["--input", "s3://test-data/input/x/", "--split-type", "Lines", "--dry-run"]
    result = invoke("submit", "--stack", STACK, *args)
    assert result.exit_code == 2, result.output
    assert "'Lines' is not allowed; did you mean 'Line'?" in result.output


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


def test_status_says_when_the_failed_shards_named_are_not_all(invoke, deployed):
    cut = {"failed_shards": ["b.csv"], "failed_shards_cut": True}
    _record_run(deployed, "c1", FAILED, shards=100_000, error="ShardsMissing", **cut)
    result = invoke("status", "c1", "--stack", STACK)
    assert result.exit_code == 0, result.output
    assert "b.csv, and maybe more" in " ".join(result.output.split())


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
    assert set(document) == {"run", "actual", "shards"}
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


def _estimated_run(deployed, run_id: str, status: str, throughput, **attributes) -> dict:
    """A run item as Plan writes it: the estimate of 4 shards of 1 MB on 2 m5.xlarge."""
    settings = TransformSettings.from_request(
        {"instance_count": 2, "instance_type": "ml.m5.xlarge"}
    )
    tally = ShardTally({"shard_size": 1_000_000}, keep=True)
    for name in ("a.csv", "b.csv"):
        tally.add(name, 2_000_000)
    job = run_estimate(
        tally,
        objects=2,
        bytes=4_000_000,
        settings=settings,
        engine="transform",
        region=REGION,
        asked=EstimateRequest(throughput),
    )
    _record_run(
        deployed,
        run_id,
        status,
        estimate=job.to_item(),
        settings={"instance_count": 2, "instance_type": "ml.m5.xlarge"},
        started_at="2025-01-01T00:00:00+00:00",
        **attributes,
    )
    return job.to_item()


def test_status_json_shows_the_estimate_beside_what_the_run_took(invoke, deployed):
    throughput = Throughput(None, 1000.0, 1, "test")
    estimate = _estimated_run(
        deployed, "e1", SUCCEEDED, throughput, finished_at="2025-01-01T00:30:00+00:00",
        shards=4, records_in=900, records_out=900,
    )  # fmt: skip
    document = json.loads(invoke("status", "e1", "--stack", STACK, "--json").output)
    price = table_price("ml.m5.xlarge", REGION)
    # 1,000 B/s per busy CPU x 4 vCPUs: each 1 MB shard 250 s; 2 per instance
    assert document["run"]["estimate"] == as_json(estimate, tuple(estimate))
    assert document["run"]["estimate"]["job_seconds"] == 500
    assert document["actual"] == {
        "finished": True,
        "duration_seconds": 1800.0,
        "instance_type": "ml.m5.xlarge",
        "instances": 2,
        "instance_hours_at_most": 1.0,  # 2 instances for the run's half hour
        "usd_per_hour": price,
        "cost_usd_at_most": price,
        "shards": 4,
        "records_in": 900,
        "records_out": 900,
    }
    assert tuple(document["actual"]) == ACTUAL_KEYS


def test_status_shows_the_estimate_and_actual_side_by_side(invoke, deployed):
    throughput = Throughput(None, 1000.0, 1, "test")
    _estimated_run(
        deployed, "e2", SUCCEEDED, throughput, finished_at="2025-01-01T00:30:00+00:00",
        shards=4, records_out=900,
    )  # fmt: skip
    result = invoke("status", "e2", "--stack", STACK)
    assert result.exit_code == 0, result.output
    cells = [line.replace("│", " ").split() for line in result.output.splitlines()]
    row = {words[0]: " ".join(words) for words in cells if words}
    assert "estimate and actual" in result.output
    assert "8.3 min" in row["duration"] and "30.0 min" in row["duration"]
    hours = 2 * 500 / 3600
    assert (
        figures.decimal(hours) in row["instance-hours"] and "at most 1.00" in row["instance-hours"]
    )
    price = table_price("ml.m5.xlarge", REGION)
    assert (
        figures.usd(hours * price) in row["cost"]
        and f"at most {figures.usd(price)}" in (row["cost"])
    )


def test_a_running_run_without_a_throughput_shows_what_the_estimate_lacks(invoke, deployed):
    _estimated_run(deployed, "e3", RUNNING, None)
    result = invoke("status", "e3", "--stack", STACK)
    assert result.exit_code == 0, result.output
    assert "needs a measured throughput" in result.output and "so far" in result.output
    document = json.loads(invoke("status", "e3", "--stack", STACK, "--json").output)
    assert "job_seconds" not in document["run"]["estimate"]
    assert document["run"]["estimate"]["shards"] == 4
    assert document["actual"]["finished"] is False
    assert document["actual"]["duration_seconds"] > 0


def test_a_run_item_without_an_estimate_is_priced_from_the_table_of_its_region(deployed):
    _record_run(
        deployed, "old", SUCCEEDED, settings={"instance_count": 1, "instance_type": "ml.c5.xlarge"},
        started_at="2025-01-01T00:00:00Z", finished_at="2025-01-01T02:00:00Z",
    )  # fmt: skip
    taken = actual(deployed.table.get_run("old"))
    assert taken["instance_hours_at_most"] == 2.0
    assert taken["usd_per_hour"] == table_price("ml.c5.xlarge", REGION)


def test_submit_measures_the_throughput_the_run_is_estimated_with(invoke, deployed, tmp_path):
    example = write_example(tmp_path / "example", 2000)
    result = invoke(
        "submit", "--stack", STACK, "--input", "s3://test-data/input/daily/", "--dry-run",
        "--content-type", "text/csv", "--accept", "text/csv", "--split-type", "Line",
        "--estimate-model", str(example / "model"), "--estimate-sample", str(example / "input"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    start = result.output.index('{\n  "state_machine_arn"')  # after the progress line
    request = json.JSONDecoder().raw_decode(result.output[start:])[0]["request"]
    measured = request["estimate"]
    assert set(measured) == {"bytes_per_second", "rows_per_second", "busy_cpus"}
    assert measured["bytes_per_second"] > measured["rows_per_second"] > 0
    assert measured["busy_cpus"] >= 1
    RunRequest.parse(request)  # the Plan takes it


def test_submit_needs_both_the_estimate_model_and_its_sample(invoke, deployed, tmp_path):
    result = invoke(
        "submit", "--stack", STACK, "--input", "s3://test-data/input/daily/",
        "--estimate-model", str(tmp_path),
    )  # fmt: skip
    assert result.exit_code == 2 and "--estimate-model, --estimate-sample: give both" in (
        result.output
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


def test_status_shows_the_rows_plan_read_from_a_parquet_runs_footers(invoke, deployed):
    _record_run(deployed, "pq", SUCCEEDED, rows=340, records_in=340, records_out=340)
    result = invoke("status", "pq", "--stack", STACK)
    assert result.exit_code == 0, result.output
    cells = [line.replace("│", " ").split() for line in result.output.splitlines()]
    assert ["input", "rows", "340"] in cells
    shown = json.loads(invoke("status", "pq", "--stack", STACK, "--json").output)
    assert shown["run"]["rows"] == 340


def test_status_shows_the_records_set_aside_and_where_they_are_named(invoke, deployed):
    _record_run(
        deployed,
        "q",
        SUCCEEDED,
        records_in=10_000,
        records_out=9_997,
        records_quarantined=3,
    )
    result = invoke("status", "q", "--stack", STACK)
    assert result.exit_code == 0, result.output
    assert "records set aside" in result.output
    assert "3, named in each output's .errors.jsonl" in " ".join(
        line.replace("│", " ").strip() for line in result.output.splitlines()
    ).replace("  ", " ")
    shown = json.loads(invoke("status", "q", "--stack", STACK, "--json").output)
    assert shown["run"]["records_quarantined"] == 3
    listed = json.loads(invoke("runs", "--stack", STACK, "--json").output)
    assert [run["records_quarantined"] for run in listed if run["run_id"] == "q"] == [3]
