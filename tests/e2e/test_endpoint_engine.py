"""The endpoint engine in the synthesized state machine, offline: the round's shards scored
by the ScoreShards Map of ScoreShard Lambdas, each calling sagemaker-runtime InvokeEndpoint,
which reaches a real ``batchinfer serve`` (gunicorn) serving model M. The same bytes as the
job engines (R19: one output per shard, as a transform job writes it), throttling retried
in the Lambda and by the Map, an endpoint unavailable past every retry left to the next
round, a refused record a named data failure without another round (R19), a Lambda out of
time continued from its saved position, one that died completing its output retried
without scoring again, an unknown endpoint refused by Plan."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchinfer.pipeline.storage.status_table import FAILED, SUCCEEDED, StatusTable
from batchinfer.serving.launcher import start_server
from tests.support.offline import (
    REGION,
    Dies,
    LambdaFault,
    OfflineStack,
    OutOfTime,
    Throttle,
    offline_stack,
)

from .conftest import ENV, RETRY, synthesize
from .test_existing_buckets import LAKE_KEY, create_bucket
from .test_happy_path import csv_rows

ENDPOINT = "row-sum"
START_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def endpoint_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The dev environment allowed to invoke one endpoint, two shards scored at once."""
    return synthesize(
        ENV,
        tmp_path_factory.mktemp("cdk.out"),
        endpoints=[{"name": ENDPOINT}],
        endpoint_concurrency=2,
    )


@pytest.fixture(scope="module")
def server_url(row_sum_model_dir: Path) -> Iterator[str]:
    """Model M behind a real ``batchinfer serve`` with 2 workers."""
    with start_server(row_sum_model_dir, workers=2) as server:
        server.wait_healthy(START_TIMEOUT)
        yield server.url


@pytest.fixture
def stack(
    endpoint_template: dict[str, Any], row_sum_archive: Path, aws_env: None
) -> Iterator[OfflineStack]:
    with offline_stack(endpoint_template, row_sum_archive) as offline:
        yield offline


@pytest.fixture
def endpoint(stack: OfflineStack, server_url: str) -> OfflineStack:
    """The stack with endpoint ``row-sum`` InService, served by the real server."""
    stack.endpoints.create(ENDPOINT, server_url)
    return stack


def endpoint_run(stack: OfflineStack, run_id: str, data: bytes, **request: Any) -> dict[str, Any]:
    stack.put(f"input/{run_id}/a.csv", data)
    return {"input": f"s3://{stack.bucket}/input/{run_id}/", "engine": "endpoint"} | request


def run_status(stack: OfflineStack, run_id: str) -> str | None:
    return (StatusTable.named(stack.table_name).get_run(run_id) or {}).get("run_status")


def test_the_three_engines_write_the_same_bytes(endpoint):
    """Two objects, two shards each, merged: transform and processing jobs and the endpoint
    give the same merged outputs, byte for byte."""
    stack = endpoint
    stack.put("input/same/a.csv", csv_rows(40))
    stack.put("input/same/b.csv", csv_rows(25, offset=7))
    outputs = {}
    for engine in ("transform", "processing", "endpoint"):
        request = {
            "input": f"s3://{stack.bucket}/input/same/",
            "engine": engine,
            "shards": 2,
            "merge": True,
            "max_concurrent_transforms": 2,
            "max_payload_mb": 1,
        }
        execution = stack.run(request, f"same-{engine}")
        assert execution.status == "SUCCEEDED", execution.cause
        outputs[engine] = {
            name: stack.get(f"s3://{stack.bucket}/output/same-{engine}/{name}")
            for name in ("a.csv.out", "b.csv.out")
        }
    assert outputs["endpoint"] == outputs["transform"] == outputs["processing"]
    assert outputs["endpoint"]["a.csv.out"].splitlines() == [b"%d" % (4 * i + 1) for i in range(40)]
    assert len(stack.lambdas.events_of("score_shard")) == 4, "one invocation per shard"
    assert stack.jobs.started and not any("same-endpoint" in j for j in stack.jobs.started)


def test_a_throttled_endpoint_is_retried_in_the_lambda_then_by_the_map(endpoint):
    """InvokeEndpoint throttled 5 times with HTTP 400 (classified by its code): the first
    invocation tries 4 times (InvocationsMaxRetries 3) and fails EndpointUnavailable, the
    Map's Retry invokes the shard again, which is throttled once more and then answered."""
    stack = endpoint
    stack.endpoints.faults.append(Throttle(5))
    execution = stack.run(endpoint_run(stack, "throttled", csv_rows(12)), "throttled")
    assert execution.status == "SUCCEEDED", execution.cause
    assert [c.status for c in stack.endpoints.calls] == [400] * 5 + [200]
    assert len(stack.lambdas.events_of("score_shard")) == 2
    output = stack.get(f"s3://{stack.bucket}/output/throttled/a.csv.out")
    assert output.splitlines() == [b"%d" % (4 * i + 1) for i in range(12)]
    assert run_status(stack, "throttled") == SUCCEEDED


def test_an_endpoint_unavailable_past_every_retry_leaves_the_shard_to_the_next_round(endpoint):
    """InvokeEndpoint throttled on every call: each round's ScoreShard fails
    EndpointUnavailable after the Map's retries, the shard is left without output (not the
    run failed), Verify resubmits it; after max_rounds (3) rounds the run fails naming it."""
    stack = endpoint
    stack.endpoints.faults.append(Throttle(10_000))
    request = endpoint_run(stack, "unavailable", csv_rows(12), invocations_max_retries=0)
    execution = stack.run(request, "unavailable")
    assert execution.status == "FAILED" and execution.error == "ShardsMissing", execution.cause
    entered = execution.states_entered()
    assert entered.count("ScoreShards") == entered.count("Verify") == 3, "one round each"
    assert "1 of 1 shards have no valid output after 3 job round(s)" in execution.cause
    assert "a.csv" in execution.cause
    attempts = 1 + RETRY["max_attempts"]  # the first invocation, then the Map's Retry
    assert len(stack.lambdas.events_of("score_shard")) == 3 * attempts
    assert run_status(stack, "unavailable") == FAILED


def test_a_refused_record_is_a_named_data_failure_without_another_round(endpoint):
    """Model M refuses a row holding "bad" with 400: a ModelError whose OriginalStatusCode
    is 4xx fails the run with DataFailure naming the shard, the record, the status and the
    server's message (R19); no second round is started."""
    stack = endpoint
    data = csv_rows(5) + b"bad,1,2\n" + csv_rows(4, offset=5)
    request = endpoint_run(stack, "refused", data, batch_strategy="SingleRecord")
    execution = stack.run(request, "refused")
    assert execution.status == "FAILED" and execution.error == "DataFailure"
    assert "shards/refused/a.csv: record 6: request failed: HTTP 400" in execution.cause
    assert "row holds 'bad'" in execution.cause
    assert execution.states_entered().count("PrepareJob") == 1, "no second round"
    assert "Verify" not in execution.states_entered()
    assert run_status(stack, "refused") == FAILED
    assert not stack.keys("output/refused/"), "the refused shard's upload was aborted"


def test_a_lambda_out_of_time_continues_in_a_new_invocation(endpoint):
    """The first invocation's time runs short after 3 requests: it saves its position and
    answers continue; the Map invokes it again, which sends the other 7 records. Every
    record is scored once: 10 calls, 10 output lines, in order."""
    stack = endpoint
    stack.lambdas.faults.append(OutOfTime("score_shard", asks=3))
    request = endpoint_run(stack, "resumed", csv_rows(10), batch_strategy="SingleRecord")
    execution = stack.run(request, "resumed")
    assert execution.status == "SUCCEEDED", execution.cause
    assert len(stack.lambdas.events_of("score_shard")) == 2
    assert len(stack.endpoints.calls) == 10
    output = stack.get(f"s3://{stack.bucket}/output/resumed/a.csv.out")
    assert output.splitlines() == [b"%d" % (4 * i + 1) for i in range(10)]


@pytest.mark.parametrize(
    ("run_id", "fault"),
    [
        # Its answer lost after it ran (Lambda.ServiceException): the retry finds it done.
        ("again", LambdaFault("score_shard", "after")),
        # Dead right after CompleteMultipartUpload (Lambda.Unknown, as out of memory): the
        # retry completes the same upload again rather than scoring the shard again.
        ("died", Dies("score_shard", "s3.CompleteMultipartUpload")),
    ],
)
def test_scoring_a_shard_again_after_it_ran_sends_nothing_twice(endpoint, run_id, fault):
    """The task's Retry invokes ScoreShard again after it did its work: the endpoint saw
    each request once, the output is whole and the run succeeds."""
    stack = endpoint
    stack.lambdas.faults.append(fault)
    request = endpoint_run(stack, run_id, csv_rows(6), batch_strategy="SingleRecord")
    execution = stack.run(request, run_id)
    assert execution.status == "SUCCEEDED", execution.cause
    assert len(stack.lambdas.events_of("score_shard")) == 2
    assert len(stack.endpoints.calls) == 6
    output = stack.get(f"s3://{stack.bucket}/output/{run_id}/a.csv.out")
    assert output.splitlines() == [b"%d" % (4 * i + 1) for i in range(6)]
    assert run_status(stack, run_id) == SUCCEEDED


def test_plan_refuses_an_endpoint_that_does_not_exist(stack):
    """The configured endpoint was never created: DescribeEndpoint finds nothing and Plan
    refuses the run, naming it; nothing is split or invoked."""
    execution = stack.run(endpoint_run(stack, "no-endpoint", csv_rows(3)), "no-endpoint")
    assert execution.status == "FAILED" and execution.error == "ValidationError"
    assert f"endpoint: '{ENDPOINT}' does not exist in {REGION}" in execution.cause
    assert not stack.lambdas.events_of("split_object")
    assert not stack.endpoints.calls


def test_an_endpoint_run_reads_a_data_lake_and_writes_another_teams_bucket(prod_stack, server_url):
    """The prod example: ScoreShard reads shards copied from the KMS-encrypted data lake
    and writes each output straight into the configured output destination."""
    stack = prod_stack
    stack.endpoints.create(ENDPOINT, server_url)
    create_bucket(stack, "example-data-lake", LAKE_KEY)
    create_bucket(stack, "example-reports")
    for name, data in {"a.csv": csv_rows(20), "region/b.csv": csv_rows(5, offset=3)}.items():
        stack.s3.put_object(Bucket="example-data-lake", Key=f"scoring/ep/{name}", Body=data)
    request = {
        "input": "s3://example-data-lake/scoring/ep/",
        "output": "s3://example-reports/batchinfer/ep/",
        "engine": "endpoint",
    }
    execution = stack.run(request, "lake-endpoint")
    assert execution.status == "SUCCEEDED", execution.cause
    report = stack.get("s3://example-reports/batchinfer/ep/region/b.csv.out")
    assert report.splitlines() == [b"%d" % (4 * i + 1) for i in range(3, 8)]
    assert len(stack.get("s3://example-reports/batchinfer/ep/a.csv.out").splitlines()) == 20
    assert not stack.jobs.started


def test_records_the_endpoint_refuses_are_set_aside_as_by_a_transform_job(endpoint):
    """bad_records quarantine: ScoreShard tells apart the requests the endpoint refuses
    (400) and keeps a marker line in each refused record's place, as a transform job's
    output holds them; CountShard takes them out. The same bytes as the transform job's,
    one invocation a shard, no job."""
    from .test_bad_records import ERRORS, request, rows

    stack = endpoint
    stack.put("input/quarantine/a.csv", rows())
    written = {}
    for engine in ("transform", "endpoint"):
        execution = stack.run(
            request(stack, "quarantine", engine=engine) | {"run_id": f"q-{engine}"},
            f"q-{engine}",
        )
        assert execution.status == "SUCCEEDED", execution.cause
        output = f"s3://{stack.bucket}/output/q-{engine}/"
        written[engine] = {name: stack.get(output + name) for name in ("a.csv.out", ERRORS)}
        run = StatusTable.named(stack.table_name).get_run(f"q-{engine}")
        assert (run["records_out"], run["records_quarantined"]) == (9_997, 3)
    assert written["endpoint"] == written["transform"]
    assert len(stack.lambdas.events_of("score_shard")) == 3, "one invocation per shard"
    assert len(stack.jobs.started) == 1, "the transform run's job only"
