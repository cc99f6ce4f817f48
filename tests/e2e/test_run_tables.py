"""A header CSV and a model fitted on a pandas DataFrame through the synthesized state
machine: Plan reads the run's header once and tells the jobs' model server its names (the
job's Environment); every split drops the header and refuses an object whose header
differs (R6: the header row is no record)."""

import io
import json
import tarfile
from pathlib import Path

import joblib
import pandas as pd
import pyarrow.parquet as pq
import pytest

from batchinfer.pipeline.storage.status_table import StatusTable
from batchinfer.serving.launcher import start_server
from tests.integration.local.test_run_tables import CSV, JSONL, expected, shuffled_objects
from tests.support.customers import FEATURES, frame, pipeline_model
from tests.support.offline import offline_stack

from .test_endpoint_engine import ENDPOINT, endpoint_template
from .test_happy_path import assert_succeeded

MODEL_DATA = "s3://example-models-bucket/customers/model.tar.gz"


def parquet_of(frame: pd.DataFrame, **options: object) -> bytes:
    sink = io.BytesIO()
    frame.to_parquet(sink, **options)
    return sink.getvalue()


def assert_joined(written: bytes, frame: pd.DataFrame, pipeline_model: Path) -> None:
    """``written`` is the Parquet file ``frame.assign(prediction=pipeline.predict(frame))``."""
    pipeline = joblib.load(pipeline_model / "model.joblib")
    pd.testing.assert_frame_equal(
        pd.read_parquet(io.BytesIO(written)), frame.assign(prediction=pipeline.predict(frame))
    )


# Parquet in and out: each file (or shard of row groups) one request; the stack's defaults
# are CSV's, with SplitType and AssembleWith Line.
PARQUET = {
    "content_type": "application/x-parquet",
    "accept": "application/x-parquet",
    "split_type": "None",
    "assemble_with": "None",
}
__all__ = ["endpoint_template", "frame", "pipeline_model"]  # fixtures shared with their modules


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


def test_parquet_objects_are_scored_by_name_and_counted_by_row_through_the_pipeline(
    tables, pipeline_model, frame
):
    """Each Parquet object is one request (SplitType None); the jobs' server reads its
    columns by name and answers Parquet; CountShard counts the rows of both from their
    footers, and the status table and the run-finished event carry the rows."""
    table = frame.assign(plan=frame["plan"].astype("category"))[["plan", "city", "income", "age"]]
    for name, part in (("a", table[:150]), ("b", table[150:])):
        tables.put(
            f"input/parquet/{name}.parquet", parquet_of(part, index=False, row_group_size=60)
        )
    request = {
        "input": f"s3://{tables.bucket}/input/parquet/",
        "run_id": "parquet",
        "model_data": MODEL_DATA,
        **PARQUET,
    }
    execution = tables.run(request, "exec-parquet")
    assert execution.status == "SUCCEEDED", execution.cause
    scored = pd.concat(
        pd.read_parquet(
            io.BytesIO(tables.get(f"s3://{tables.bucket}/output/parquet/{n}.parquet.out"))
        )
        for n in "ab"
    )
    assert [str(v) for v in scored["prediction"]] == expected(pipeline_model, frame)
    assert_succeeded(tables, "parquet", records=len(frame), shards=2)


def test_a_parquet_join_is_the_model_servers_through_the_pipeline(tables, pipeline_model, frame):
    """SageMaker joins CSV and JSON only (R17, R18): the job asks for no DataProcessing, and
    its Environment tells the model server to answer the input's columns and the
    predictions."""
    tables.put("input/joined/a.parquet", parquet_of(frame, index=False))
    request = {
        "input": f"s3://{tables.bucket}/input/joined/",
        "run_id": "joined",
        "model_data": MODEL_DATA,
        **PARQUET,
        "join_source": "Input",
    }
    execution = tables.run(request, "exec-joined")
    assert execution.status == "SUCCEEDED", execution.cause
    ((_, job),) = tables.jobs.requests
    assert "DataProcessing" not in job
    assert job["Environment"]["BATCHINFER_JOIN_SOURCE"] == "Input"
    written = tables.get(f"s3://{tables.bucket}/output/joined/a.parquet.out")
    assert_joined(written, frame, pipeline_model)


def test_a_parquet_object_split_into_row_group_shards_merges_into_one_parquet(
    tables, pipeline_model, frame
):
    """R3: one object is one instance's work, so SplitObject cuts it into three standalone
    Parquet files of whole row groups (UploadPartCopy and a footer each); one job scores
    them, CountShard counts each shard's rows from the two footers, and MergeObject joins
    the three answers into one Parquet file: ``df.assign(prediction=pipeline.predict(df))``."""
    table = frame.assign(customer_id=range(len(frame)))
    table["plan"] = table["plan"].astype("category")
    tables.put("input/groups/a.parquet", parquet_of(table, index=False, row_group_size=40))
    request = {
        "input": f"s3://{tables.bucket}/input/groups/",
        "run_id": "groups",
        "model_data": MODEL_DATA,
        **PARQUET,
        "join_source": "Input",
        "shards": 3,
        "merge": True,
    }
    execution = tables.run(request, "exec-groups")
    assert execution.status == "SUCCEEDED", execution.cause
    merged = tables.get(f"s3://{tables.bucket}/output/groups/a.parquet.out")
    assert_joined(merged, table, pipeline_model)
    assert pq.ParquetFile(io.BytesIO(merged)).metadata.num_row_groups == 3  # one per answer
    assert_succeeded(tables, "groups", records=len(frame), shards=3)
    # Plan read the rows from the footer before any split: the status item had them first
    assert StatusTable.named(tables.table_name).get_run("groups")["rows"] == len(frame)


def test_a_parquet_join_reaches_the_endpoint_in_each_requests_custom_attributes(
    endpoint_stack, pipeline_model, frame
):
    """ScoreShard invokes the endpoint with each row-group shard's bytes; the join rides in
    the request's CustomAttributes, and MergeObject joins the answers into one Parquet
    object: ``df.assign(prediction=pipeline.predict(df))``."""
    stack = endpoint_stack
    table = frame.assign(plan=frame["plan"].astype("category"))
    stack.put("input/ep-parquet/a.parquet", parquet_of(table, index=False, row_group_size=60))
    request = {
        "input": f"s3://{stack.bucket}/input/ep-parquet/",
        "engine": "endpoint",
        **PARQUET,
        "join_source": "Input",
        "shards": 2,
        "merge": True,
    }
    execution = stack.run(request, "ep-parquet")
    assert execution.status == "SUCCEEDED", execution.cause
    merged = stack.get(f"s3://{stack.bucket}/output/ep-parquet/a.parquet.out")
    assert_joined(merged, table, pipeline_model)


def test_a_spark_parquet_folder_is_scored_by_prefix_as_a_schedule_names_it(
    tables, pipeline_model, frame
):
    """A schedule's (or the S3 trigger's) request names a folder: Spark's output has Parquet
    parts beside ``_SUCCESS`` and hidden ``.crc`` files, which are no inputs; each part is
    scored and its output holds its rows (R4: the prefix selects the objects)."""
    parts = {
        "part-00000-1a.snappy.parquet": frame[:100],
        "part-00001-1a.snappy.parquet": frame[100:],
    }
    for name, part in parts.items():
        tables.put(f"input/spark/day=1/{name}", parquet_of(part, index=False))
        tables.put(f"input/spark/day=1/.{name}.crc", b"crc\x00")
    tables.put("input/spark/day=1/_SUCCESS", b"")
    request = {
        "input": f"s3://{tables.bucket}/input/spark/day=1/",
        "run_id": "spark",
        "model_data": MODEL_DATA,
        **PARQUET,
    }
    execution = tables.run(request, "exec-spark")
    assert execution.status == "SUCCEEDED", execution.cause
    outputs = sorted(k for k in tables.keys("output/spark/") if k.endswith(".out"))
    assert outputs == [f"output/spark/{name}.out" for name in sorted(parts)]
    pipeline = joblib.load(pipeline_model / "model.joblib")
    for name, part in parts.items():
        written = pd.read_parquet(
            io.BytesIO(tables.get(f"s3://{tables.bucket}/output/spark/{name}.out"))
        )
        assert list(written["prediction"]) == list(pipeline.predict(part))
    assert_succeeded(tables, "spark", records=len(frame), shards=2)


def test_a_truncated_parquet_object_is_refused_by_plan_naming_it_and_nothing_is_split(
    tables, frame
):
    """Plan reads every Parquet object's footer, so a truncated one fails the run before
    any object is split or scored."""
    whole = parquet_of(frame, index=False, row_group_size=60)
    tables.put("input/cut/a.parquet", whole)
    tables.put("input/cut/b.parquet", whole[: len(whole) // 2])
    request = {
        "input": f"s3://{tables.bucket}/input/cut/",
        "run_id": "cut",
        "model_data": MODEL_DATA,
        **PARQUET,
        "shards": 2,
        "merge": True,
    }
    execution = tables.run(request, "exec-cut")
    assert execution.status == "FAILED"
    cause = execution.cause or ""
    assert "input/cut/b.parquet: does not end with PAR1" in cause, cause
    assert not tables.jobs.requests, "no job scores a run with an input it cannot split"
    assert not tables.keys("shards/cut/")
    assert not [k for k in tables.keys("output/cut/") if k.endswith(".out")]
