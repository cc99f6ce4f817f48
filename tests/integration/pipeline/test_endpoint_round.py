"""The endpoint engine's round in the pipeline: InvokeEndpoint's errors classified by code,
Plan's endpoint checks, PrepareJob's item list, ScoreShard stopping and continuing over a
multipart output without a record twice, a refused record recorded and named by
ScoringOutcome, throttling past one invocation's retries left to the Map. The endpoint is a
real ``batchinfer serve`` behind sagemaker-runtime (tests/support/offline/endpoints.py)."""

import gzip
import json
import textwrap
from collections.abc import Iterator
from dataclasses import replace

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from batchinfer.endpoints.targets import EndpointTarget, answer_of
from batchinfer.errors import InputError, ValidationError
from batchinfer.pipeline.contract.layout import MAP_RESULTS_FORMAT, MAP_RESULTS_PREFIX
from batchinfer.pipeline.contract.run_errors import (
    DataFailure,
    EndpointUnavailable,
    MapItemFailed,
)
from batchinfer.pipeline.contract.state import ShardEntry
from batchinfer.pipeline.steps.plan import plan_run
from batchinfer.pipeline.steps.prepare_job import prepare_job
from batchinfer.pipeline.steps.score_shard import CONTINUE, DONE, FAILED, score_shard
from batchinfer.pipeline.steps.scoring_outcome import COMPLETED, scoring_outcome
from batchinfer.serving.launcher import start_server
from batchinfer.transform.settings import TransformSettings
from tests.support.map_results import Child, write_map_results
from tests.support.offline import Endpoints, Throttle
from tests.support.run_state import BUCKET, CSV_LINES, example_plan, example_round

from .conftest import REGION

ENDPOINT = "padder"
# Each row "value,width" answers value right-aligned in width characters; a row holding
# "bad" is refused with 400 (the model's input_fn fails: E9).
PADDER = textwrap.dedent(
    """
    def model_fn(model_dir):
        return None


    def input_fn(body, content_type):
        text = body.decode() if isinstance(body, bytes) else body
        if "bad" in text:
            raise ValueError("row holds 'bad'")
        return [line.split(",") for line in text.split("\\n") if line.strip()]


    def predict_fn(rows, model):
        return [value.rjust(int(width), ".") for value, width in rows]


    def output_fn(prediction, accept):
        return "\\n".join(prediction)
    """
)
JOB = "bi-test-r-1-r1-abc"


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    model_dir = tmp_path_factory.mktemp("padder")
    (model_dir / "code").mkdir()
    (model_dir / "code" / "inference.py").write_text(PADDER)
    with start_server(model_dir, workers=2) as server:
        server.wait_healthy(120.0)
        yield server.url


@pytest.fixture
def endpoints(account, server_url) -> Iterator[Endpoints]:
    offline = Endpoints(account.sagemaker)
    offline.create(ENDPOINT, server_url)
    with offline.intercepting():
        yield offline


@pytest.fixture
def runtime(endpoints):
    return boto3.client("sagemaker-runtime", region_name=REGION)


def padded_rows(count: int, width: int) -> bytes:
    return b"".join(b"%d,%d\n" % (i, width) for i in range(count))


def expected(count: int, width: int) -> bytes:
    return b"".join(str(i).rjust(width, ".").encode() + b"\n" for i in range(count))


def endpoint_plan(**settings):
    return replace(
        example_plan("endpoint", batch_strategy="SingleRecord", **settings),
        endpoint={"name": ENDPOINT, "variant": None, "inference_component": None},
    )


def shard_entry(name: str, compression: str = "None") -> ShardEntry:
    """The shard list's line for shard 0, ``name`` under the run's shard prefix."""
    return ShardEntry(0, name, f"s3://{BUCKET}/input/{name}", name, 0, compression)


def asks_until_stop(asks: int):
    """``seconds_left`` with plenty of time for ``asks`` questions, then none."""
    left = iter([900.0] * asks)
    return lambda: next(left, 0.0)


def client_error(code: str, status: int, **extra) -> ClientError:
    response = {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {}} | extra
    response["ResponseMetadata"]["HTTPStatusCode"] = status
    return ClientError(response, "InvokeEndpoint")


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (client_error("ThrottlingException", 400), 429),  # throttling may come with 400
        (client_error("ModelNotReadyException", 429), 429),
        (client_error("InternalFailure", 500), 500),
        (client_error("ServiceUnavailable", 503), 503),
        (client_error("ModelError", 424, OriginalStatusCode=400, OriginalMessage="bad"), 400),
        (client_error("ModelError", 424, OriginalStatusCode=503, OriginalMessage="x"), 503),
    ],
)
def test_invoke_endpoint_errors_are_classified_by_code(error, status):
    assert answer_of(error)[0] == status


def test_a_fault_of_the_call_itself_is_raised():
    """Access denied is neither the data's fault nor worth a retry: raised as it is."""
    error = client_error("AccessDeniedException", 400)
    with pytest.raises(ClientError):
        answer_of(error)


def test_prepare_job_names_an_endpoint_attempt_and_writes_nothing(account):
    plan = endpoint_plan()
    manifest = f"s3://{BUCKET}/runs/r-1/round-2.manifest"
    round_ = example_round(2, manifest)
    job = prepare_job(plan, round_, env=account.env, s3=account.s3)
    assert job.engine == "endpoint"
    assert job.request == {}, "the Map reads the round's own shard list, $.round.shards_key"
    assert account.s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0
    assert job.name != prepare_job(plan, round_, env=account.env, s3=account.s3).name, "R1"


@pytest.mark.parametrize("compression", ["None", "Gzip"])
def test_a_stopped_shard_continues_over_its_multipart_output(
    account, runtime, endpoints, compression
):
    """12 records of 1 MB output each, stopped after 10 requests: one 8 MiB part is
    uploaded and the rest kept as the tail; the next call sends the last 2 records only
    and completes the upload: the output is whole, every record once."""
    data = padded_rows(12, 1_000_000)
    account.put("shards/r-1/a.csv", gzip.compress(data) if compression == "Gzip" else data)
    plan, shard = endpoint_plan(), shard_entry("a.csv", compression)

    def score(seconds_left):
        return score_shard(
            plan, shard, JOB, s3=account.s3, runtime=runtime, seconds_left=seconds_left
        )

    assert score(asks_until_stop(10)) == CONTINUE
    assert len(endpoints.calls) == 10
    assert not account.keys("output/r-1/")
    saved = json.loads(account.get(f"s3://{BUCKET}/runs/r-1/endpoint/{JOB}/progress/a.csv.json"))
    assert saved["position"]["records_in"] == 10
    assert len(saved["upload"]["parts"]) == 1
    tail = account.get(f"s3://{BUCKET}/runs/r-1/endpoint/{JOB}/progress/a.csv.tail")
    assert saved["upload"]["size"] + len(tail) == saved["position"]["output_bytes"]
    assert score(lambda: 900.0) == DONE
    assert len(endpoints.calls) == 12
    assert account.get(f"s3://{BUCKET}/output/r-1/a.csv.out") == expected(12, 1_000_000)
    assert score(lambda: 900.0) == DONE, "a shard done is not scored again"
    assert len(endpoints.calls) == 12


class Died(Exception):
    """The invocation's process is gone (out of memory, timed out)."""


def dies_after(client, operation: str):
    """Make ``client`` raise Died once, right after ``operation`` succeeded."""
    state = {"armed": True}

    def hook(**_):
        if state["armed"]:
            state["armed"] = False
            raise Died(f"died after {operation}")

    client.meta.events.register(f"after-call.s3.{operation}", hook)


def test_an_invocation_that_died_completing_the_output_is_retried_by_completing_it(
    account, runtime, endpoints
):
    """ScoreShard dies right after CompleteMultipartUpload, before saving the shard done:
    the retry completes the same upload again (S3 answers it as before) and saves it
    done. Each record went to the endpoint once; the output is whole."""
    account.put("shards/r-1/a.csv", padded_rows(5, 3))
    plan, shard = endpoint_plan(), shard_entry("a.csv")
    dies_after(account.s3, "CompleteMultipartUpload")
    with pytest.raises(Died):
        score_shard(plan, shard, JOB, s3=account.s3, runtime=runtime, seconds_left=lambda: 900.0)
    assert len(endpoints.calls) == 5
    assert (
        score_shard(plan, shard, JOB, s3=account.s3, runtime=runtime, seconds_left=lambda: 900.0)
        == DONE
    )
    assert len(endpoints.calls) == 5, "no record was sent again"
    assert account.get(f"s3://{BUCKET}/output/r-1/a.csv.out") == expected(5, 3)
    saved = json.loads(account.get(f"s3://{BUCKET}/runs/r-1/endpoint/{JOB}/progress/a.csv.json"))
    assert saved == {"position": saved["position"]} and saved["position"]["done"]


def test_an_output_replaced_before_the_retry_completes_it_is_not_taken_as_scored(
    account, runtime, endpoints
):
    """The object the upload made was replaced before the retry: S3 answers NoSuchUpload,
    and the shard fails naming its output rather than passing someone else's bytes."""
    account.put("shards/r-1/a.csv", padded_rows(3, 3))
    plan, shard = endpoint_plan(), shard_entry("a.csv")
    dies_after(account.s3, "CompleteMultipartUpload")
    with pytest.raises(Died):
        score_shard(plan, shard, JOB, s3=account.s3, runtime=runtime, seconds_left=lambda: 900.0)
    account.put("output/r-1/a.csv.out", b"someone else's bytes\n")
    # S3's documented answer; moto 5.2.5 raises KeyError on an upload it no longer holds.
    account.s3.meta.events.register(
        "before-call.s3.CompleteMultipartUpload",
        lambda **_: (
            AWSResponse("offline", 404, {}, None),
            {"Error": {"Code": "NoSuchUpload", "Message": "The specified upload does not exist"},
             "ResponseMetadata": {"HTTPStatusCode": 404}},
        ),
    )  # fmt: skip
    with pytest.raises(InputError, match=r"output/r-1/a.csv.out: the shard was scored but"):
        score_shard(plan, shard, JOB, s3=account.s3, runtime=runtime, seconds_left=lambda: 900.0)
    assert len(endpoints.calls) == 3


def test_a_refused_record_is_recorded_and_named_by_the_outcome(account, runtime):
    account.put("shards/r-1/a.csv", padded_rows(3, 4) + b"bad,4\n" + padded_rows(2, 4))
    plan = endpoint_plan()
    status = score_shard(
        plan, shard_entry("a.csv"), JOB, s3=account.s3, runtime=runtime, seconds_left=lambda: 900.0
    )
    assert status == FAILED
    assert not account.keys("output/r-1/")
    assert not account.s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")
    with pytest.raises(DataFailure) as failure:
        scoring_outcome(plan, JOB, scores=scores(account, scored("a.csv")), s3=account.s3)
    message = str(failure.value)
    assert f"s3://{BUCKET}/shards/r-1/a.csv: record 4: request failed: HTTP 400" in message
    assert "row holds 'bad'" in message and "no new round" in message


def scored(name: str, error: str | None = None, cause: str | None = None) -> Child:
    """A ScoreShard child of the ScoreShards Map: its input, and its answer or its error."""
    given = {"shard": {"number": 1, "name": f"r-1/{name}"}, "job": JOB}
    return Child(given, None if error else {"scored": {"status": DONE}}, error, cause)


def scores(account, *children: Child) -> str:
    """The key of the ScoreShards Map's result manifest over ``children``."""
    run = "arn:aws:states:eu-west-1:123456789012:mapRun:runs/ScoreShards:0a1b2c3d"
    return write_map_results(
        account.s3, BUCKET, MAP_RESULTS_PREFIX, run, list(children), MAP_RESULTS_FORMAT
    )


def test_a_round_without_failures_is_completed(account):
    outcome = scoring_outcome(
        endpoint_plan(), JOB, scores=scores(account, scored("a.csv")), s3=account.s3
    )
    assert (outcome.name, outcome.status) == (JOB, COMPLETED)


def test_a_shard_whose_endpoint_stayed_unavailable_is_left_for_the_next_round(account):
    """Its ScoreShard failed with EndpointUnavailable past the Map's retries: the round is
    Completed, and Verify finds the shard without output."""
    unavailable = scored("b.csv", "EndpointUnavailable", "HTTP 429: ThrottlingException")
    manifest = scores(account, scored("a.csv"), unavailable)
    outcome = scoring_outcome(endpoint_plan(), JOB, scores=manifest, s3=account.s3)
    assert (outcome.name, outcome.status) == (JOB, COMPLETED)


def test_a_scoreshard_failed_otherwise_is_named_with_its_error(account):
    """The ScoreShards Map tolerates the failure (on AWS its own would name no shard): the
    outcome names the shard, the error and the cause from the Map's result files."""
    died = scored("b.csv", "Lambda.Unknown", "The function ran out of memory")
    with pytest.raises(MapItemFailed) as failure:
        scoring_outcome(
            endpoint_plan(), JOB, scores=scores(account, scored("a.csv"), died), s3=account.s3
        )
    assert "r-1/b.csv (Lambda.Unknown): The function ran out of memory" in str(failure.value)
    assert "a.csv" not in str(failure.value)


def test_throttling_past_the_retries_is_left_to_the_map(account, runtime, endpoints):
    """InvocationsMaxRetries 1: two throttled attempts, then EndpointUnavailable (the
    Map's Retry invokes the shard again); nothing was saved, so nothing is left behind."""
    account.put("shards/r-1/a.csv", padded_rows(2, 3))
    endpoints.faults.append(Throttle(2))
    plan = endpoint_plan(invocations_max_retries=1)
    with pytest.raises(EndpointUnavailable, match="HTTP 429: ThrottlingException"):
        score_shard(
            plan,
            shard_entry("a.csv"),
            JOB,
            s3=account.s3,
            runtime=runtime,
            seconds_left=lambda: 900.0,
        )
    assert [call.status for call in endpoints.calls] == [400, 400]
    assert not account.s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")


def plan_request(account, request, endpoints=()):
    env = replace(account.env, endpoints=endpoints)
    return plan_run(
        {"input": f"s3://{BUCKET}/input/"} | request,
        execution="arn:aws:states:eu-west-1:123456789012:execution:runs:e",
        execution_name="e",
        started_at="2025-01-01T00:00:00Z",
        env=env,
        s3=account.s3,
        sagemaker=account.sagemaker,
        table=account.table,
    )


CONFIGURED = (EndpointTarget(ENDPOINT, "blue", None),)


@pytest.mark.parametrize(
    ("request_", "configured", "message"),
    [
        ({"engine": "endpoint"}, (), "engine: endpoint needs an endpoint this stack may invoke"),
        (
            {"engine": "endpoint", "endpoint": "other"},
            CONFIGURED,
            f"endpoint: 'other' is not one this stack may invoke; allowed: {ENDPOINT}",
        ),
        ({"endpoint": ENDPOINT}, CONFIGURED, "endpoint: only with engine endpoint"),
        (
            {"engine": "endpoint", "max_payload_mb": 20},
            CONFIGURED,
            "is not allowed with the endpoint engine",
        ),
        (
            {"engine": "endpoint", "model_data": "s3://m/model.tar.gz"},
            CONFIGURED,
            "model_data: engine endpoint scores through an endpoint",
        ),
        ({"engine": "endpoint"}, CONFIGURED, f"endpoint: '{ENDPOINT}' does not exist in {REGION}"),
    ],
)
def test_plan_refuses_an_endpoint_run_it_cannot_score(account, request_, configured, message):
    account.put("input/a.csv", b"1,2\n")
    with pytest.raises(ValidationError, match=message):
        plan_request(account, request_, configured)


def test_plan_names_the_endpoint_and_its_variant(account, endpoints):
    account.put("input/a.csv", b"1,2\n")
    plan = plan_request(account, {"engine": "endpoint", "inference_component": "ic-1"}, CONFIGURED)
    assert plan.endpoint == {"name": ENDPOINT, "variant": "blue", "inference_component": "ic-1"}
    assert plan.settings == TransformSettings.from_request(
        {**CSV_LINES, "instance_type": "ml.m5.large"}
    )
