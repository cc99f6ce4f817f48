"""Plan: bad requests fail naming the key (issue 6's bad-request cases) and a run id is
claimed once: a second start neither redoes nor overwrites the first run."""

import json

import pytest

from batchinfer.errors import InputError, ValidationError
from batchinfer.pipeline.plan import plan_run
from batchinfer.pipeline.status_table import RUNNING, RunAlreadyExists

from .conftest import BUCKET

EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:"


def plan(account, request, name="exec-1"):
    return plan_run(
        request,
        execution=EXECUTION + name,
        execution_name=name,
        started_at="2025-01-01T00:00:00Z",
        env=account.env,
        s3=account.s3,
        table=account.table,
    ).to_state()


@pytest.mark.parametrize(
    ("request_", "error", "message"),
    [
        ({}, ValidationError, r"input: required"),
        (
            {"input": "s3://x"},
            ValidationError,
            r"input: 's3://x' is outside s3://batchinfer-test-data/input/",
        ),
        ({"input": "/tmp/data.csv"}, ValidationError, r"input: '/tmp/data.csv' is not an S3 URI"),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "contnet_type": "x"},
            ValidationError,
            r"request: unknown key 'contnet_type'",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "split_type": "Lines"},
            ValidationError,
            r"split_type \(SplitType\): 'Lines' is not allowed; did you mean 'Line'\?",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "engine": "emr"},
            ValidationError,
            r"engine: 'emr' is not allowed",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "run_id": "a b"},
            ValidationError,
            r"run_id: 'a b' is not allowed",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "output": f"s3://{BUCKET}/runs/"},
            ValidationError,
            r"output: .* is outside s3://batchinfer-test-data/output/",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "merge": True, "assemble_with": "None"},
            ValidationError,
            r"merge: needs assemble_with Line",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "split_type": "None", "shards": 4},
            ValidationError,
            r"shards: needs split_type Line",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "instance_type": "ml.m5.larg"},
            ValidationError,
            r"'ml\.m5\.larg' is not an instance type SageMaker accepts for transform jobs; "
            r"nearest: ml\.m5\.large",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "shards": 2, "shard_size": "1MiB"},
            ValidationError,
            r"give one of them",
        ),
        (
            {"input": f"s3://{BUCKET}/input/nothing/"},
            InputError,
            r"input: no objects under s3://batchinfer-test-data/input/nothing/",
        ),
    ],
)
def test_bad_requests_fail_naming_the_key(account, request_, error, message):
    account.put("input/d.csv", b"1,2\n")
    with pytest.raises(error, match=message):
        plan(account, request_)
    assert account.table.get_run("exec-1") is None, "nothing is claimed for a bad request"


def test_empty_input_is_an_input_error(account):
    account.put("input/empty/a.csv", b"")
    with pytest.raises(InputError, match=r"every object under .*input/empty/ is empty"):
        plan(account, {"input": f"s3://{BUCKET}/input/empty/"})


def test_plan_uses_stack_defaults_and_writes_split_tasks(account):
    account.put("input/d.csv", b"1,2\n")
    result = plan(account, {"input": f"s3://{BUCKET}/input/d.csv", "instance_count": 2})
    assert result["settings"]["content_type"] == "text/csv"  # from the stack
    assert result["settings"]["instance_count"] == 2  # from the request
    assert result["job_output"] == result["output"] == f"s3://{BUCKET}/output/exec-1/"
    assert result["job_base"] == "bi-test-exec-1"
    items = json.loads(account.get(f"s3://{BUCKET}/{result['inputs_key']}"))
    assert items == [
        {
            "input": f"s3://{BUCKET}/input/d.csv",
            "output": f"s3://{BUCKET}/shards/exec-1/",
            "compression_type": "None",
            "header": False,
            "shard_size": 64 * 1024 * 1024,
        }
    ]
    run = account.table.get_run("exec-1")
    assert run["run_status"] == RUNNING and run["execution_arn"] == EXECUTION + "exec-1"


def test_same_run_id_twice_claims_once_and_keeps_the_first(account):
    account.put("input/d.csv", b"1,2\n")
    plan(account, {"input": f"s3://{BUCKET}/input/d.csv", "run_id": "nightly-1"}, "first")
    inputs_before = account.get(f"s3://{BUCKET}/runs/nightly-1/inputs.json")
    with pytest.raises(RunAlreadyExists, match=r"run 'nightly-1' already exists .*RUNNING"):
        plan(
            account,
            {"input": f"s3://{BUCKET}/input/d.csv", "run_id": "nightly-1", "shards": 3},
            "second",
        )
    run = account.table.get_run("nightly-1")
    assert run["execution_arn"] == EXECUTION + "first"
    assert account.get(f"s3://{BUCKET}/runs/nightly-1/inputs.json") == inputs_before
    assert RunAlreadyExists.__name__ == "RunAlreadyExists"  # the state machine's Catch name
