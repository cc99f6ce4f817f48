"""A header CSV and a model fitted on a pandas DataFrame through the synthesized state
machine: Plan reads the run's header once and tells the jobs' model server its names (the
job's Environment); every split drops the header and refuses an object whose header
differs (R6: the header row is no record)."""

import json
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from batchinfer.serving.launcher import start_server
from tests.integration.local.test_run_tables import (
    CSV,
    FEATURES,
    JSONL,
    customers,
    expected,
    pipeline_model,
    shuffled_objects,
)
from tests.support.offline import offline_stack

from .test_endpoint_engine import ENDPOINT, endpoint_template

MODEL_DATA = "s3://example-models-bucket/customers/model.tar.gz"
__all__ = ["endpoint_template", "pipeline_model"]  # fixtures shared with their modules


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return customers()


@pytest.fixture
def tables(stack, pipeline_model: Path, tmp_path: Path):
    """The stack with the DataFrame Pipeline among its model sources."""
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(pipeline_model / "model.joblib", arcname="model.joblib")
    stack.s3.upload_file(str(archive), "example-models-bucket", "customers/model.tar.gz")
    return stack


def test_header_csv_is_scored_by_name_through_the_pipeline(tables, pipeline_model, frame):
    shuffled = frame[["plan", "city", "income", "age"]]
    tables.put("input/tables/a.csv", shuffled.to_csv(index=False).encode())
    request = {
        "input": f"s3://{tables.bucket}/input/tables/",
        "run_id": "tables",
        "model_data": MODEL_DATA,
        "header": True,
        "shards": 2,
        "merge": True,
        **CSV,
    }
    execution = tables.run(request, "exec-tables")
    assert execution.status == "SUCCEEDED", execution.cause

    (_, job), *_ = tables.jobs.requests
    columns = json.loads(job["Environment"]["BATCHINFER_CSV_COLUMNS"])
    assert columns == ["plan", "city", "income", "age"]
    output = tables.get(f"s3://{tables.bucket}/output/tables/a.csv.out").decode()
    assert output.splitlines() == expected(pipeline_model, frame)


def test_an_object_with_another_header_fails_its_split(tables, frame):
    tables.put("input/mixed/a.csv", frame[FEATURES].to_csv(index=False).encode())
    tables.put("input/mixed/b.csv", frame[FEATURES[::-1]].to_csv(index=False).encode())
    request = {
        "input": f"s3://{tables.bucket}/input/mixed/",
        "run_id": "mixed",
        "model_data": MODEL_DATA,
        "header": True,
        "content_type": "text/csv",
        "split_type": "Line",
    }
    execution = tables.run(request, "exec-mixed")
    assert execution.status == "FAILED"
    assert "input/mixed/b.csv" in (execution.cause or "")
    assert not tables.jobs.requests, "no job scores a run whose inputs disagree on names"


def test_json_objects_with_shuffled_keys_are_scored_by_name_through_the_pipeline(
    tables, pipeline_model, frame
):
    """`$.features` sends each object whole (R16); the jobs' server maps keys to features."""
    tables.put("input/named/a.jsonl", shuffled_objects(frame))
    request = {
        "input": f"s3://{tables.bucket}/input/named/",
        "run_id": "named",
        "model_data": MODEL_DATA,
        "shards": 2,
        "merge": True,
        **JSONL,
        "input_filter": "$.features",
    }
    execution = tables.run(request, "exec-named")
    assert execution.status == "SUCCEEDED", execution.cause
    output = tables.get(f"s3://{tables.bucket}/output/named/a.jsonl.out").decode()
    assert output.splitlines() == expected(pipeline_model, frame)


@pytest.fixture
def endpoint_stack(endpoint_template, row_sum_archive, aws_env, pipeline_model):
    """A stack allowed to invoke endpoint ENDPOINT, served by the DataFrame Pipeline."""
    with start_server(pipeline_model, workers=1) as server:
        server.wait_healthy(120.0)
        with offline_stack(endpoint_template, row_sum_archive) as offline:
            offline.endpoints.create(ENDPOINT, server.url)
            yield offline


def test_a_header_reaches_the_endpoint_in_each_requests_custom_attributes(
    endpoint_stack, pipeline_model, frame
):
    """The endpoint's server has its own environment: ScoreShard sends the run's names in
    InvokeEndpoint's CustomAttributes, which the container receives as a header."""
    stack = endpoint_stack
    stack.put(
        "input/ep/a.csv", frame[["plan", "city", "income", "age"]].to_csv(index=False).encode()
    )
    request = {
        "input": f"s3://{stack.bucket}/input/ep/",
        "engine": "endpoint",
        "header": True,
        "shards": 2,
        "merge": True,
        **CSV,
    }
    execution = stack.run(request, "ep")
    assert execution.status == "SUCCEEDED", execution.cause
    output = stack.get(f"s3://{stack.bucket}/output/ep/a.csv.out").decode()
    assert output.splitlines() == expected(pipeline_model, frame)
