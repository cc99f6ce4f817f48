"""The S3 trigger's batches: one run per folder, names deterministic from the batch (a
redelivery starts nothing new), messages that are no arrival reported one by one."""

import json

import boto3
import pytest
from moto import mock_aws

from batchinfer.errors import ValidationError
from batchinfer.pipeline.steps import arrivals
from batchinfer.pipeline.steps.arrivals import (
    Arrival,
    Trigger,
    execution_name,
    parse_arrival,
    resolve_keys,
    run_starts,
    start_arrivals,
)
from batchinfer.pipeline.storage.arrival_claims import ArrivalClaims
from tests.support.aws import create_status_table

REGION = "eu-west-1"
TRIGGER = Trigger(
    bucket="data",
    prefix="input/arrivals/",
    request={"merge": True},
    state_machine_arn="arn:aws:states:eu-west-1:123456789012:stateMachine:runs",
    table_name="status",
)


def record(key, *, event_id=None, bucket="data", message_id=None):
    body = {
        "id": event_id or f"event-{key}",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "detail": {"bucket": {"name": bucket}, "object": {"key": key, "size": 4}},
    }
    return {"messageId": message_id or f"m-{key}", "body": json.dumps(body)}


@pytest.fixture
def states(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        client = boto3.client("stepfunctions", region_name=REGION)
        arn = client.create_state_machine(
            name="runs",
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn="arn:aws:iam::123456789012:role/runs",
        )["stateMachineArn"]
        assert arn == TRIGGER.state_machine_arn
        yield client


@pytest.fixture
def s3(states):
    """The trigger's bucket, in the same mocked account."""
    client = boto3.client("s3", region_name=REGION)
    client.create_bucket(
        Bucket=TRIGGER.bucket, CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    return client


@pytest.fixture
def claims(states):
    create_status_table(TRIGGER.table_name, REGION)
    return ArrivalClaims(boto3.client("dynamodb", region_name=REGION), "status", TRIGGER.bucket)


def start(event, *, trigger=TRIGGER, states, s3, claims):
    """``start_arrivals`` with all of the function's time left."""
    return start_arrivals(
        event, trigger=trigger, states=states, s3=s3, claims=claims, time_left_ms=lambda: 120_000
    )


def started(states):
    executions = states.list_executions(stateMachineArn=TRIGGER.state_machine_arn)["executions"]
    return {
        e["name"]: json.loads(states.describe_execution(executionArn=e["executionArn"])["input"])
        for e in executions
    }


def test_a_batch_starts_one_run_per_folder_with_its_new_names(states, s3, claims):
    keys = [f"input/arrivals/{shop}/{i}.csv" for shop in ("a", "b/2024") for i in range(3)]
    event = {"Records": [record(k) for k in [*keys, "input/arrivals/top.csv"]]}
    answer = start(event, states=states, s3=s3, claims=claims)
    assert answer == {"batchItemFailures": []}
    runs = sorted(started(states).items())
    assert [(name.rsplit("-", 1)[0], request) for name, request in runs] == [
        (
            "a",
            {
                "merge": True,
                "input": "s3://data/input/arrivals/a/",
                "names": ["0.csv", "1.csv", "2.csv"],
            },
        ),
        ("arrivals", {"merge": True, "input": "s3://data/input/arrivals/", "names": ["top.csv"]}),
        (
            "b-2024",
            {
                "merge": True,
                "input": "s3://data/input/arrivals/b/2024/",
                "names": ["0.csv", "1.csv", "2.csv"],
            },
        ),
    ]


def test_a_redelivered_batch_starts_nothing_new(states, s3, claims):
    event = {"Records": [record(f"input/arrivals/a/{i}.csv") for i in range(4)]}
    start(event, states=states, s3=s3, claims=claims)
    again = start(
        {"Records": list(reversed(event["Records"]))}, states=states, s3=s3, claims=claims
    )
    assert again == {"batchItemFailures": []}
    assert len(started(states)) == 1


def test_a_later_batch_for_the_same_folder_is_a_new_run_of_its_own_names(states, s3, claims):
    start({"Records": [record("input/arrivals/a/1.csv")]}, states=states, s3=s3, claims=claims)
    start({"Records": [record("input/arrivals/a/2.csv")]}, states=states, s3=s3, claims=claims)
    assert sorted(r["names"] for r in started(states).values()) == [["1.csv"], ["2.csv"]]


def test_messages_that_are_no_arrival_are_reported_and_the_others_start(states, s3, claims):
    good = record("input/arrivals/a/1.csv")
    bad = [
        {"messageId": "not-json", "body": "{oops"},
        record("input/arrivals/a/2.csv", bucket="other", message_id="other-bucket"),
        record("input/elsewhere/3.csv", message_id="other-prefix"),
    ]
    answer = start({"Records": [good, *bad]}, states=states, s3=s3, claims=claims)
    assert answer == {
        "batchItemFailures": [
            {"itemIdentifier": i} for i in ("not-json", "other-bucket", "other-prefix")
        ]
    }
    (request,) = started(states).values()
    assert request["names"] == ["1.csv"]


def test_a_run_that_cannot_start_reports_its_messages(states, s3, claims):
    trigger = Trigger(**(TRIGGER.__dict__ | {"state_machine_arn": TRIGGER.state_machine_arn + "x"}))
    event = {
        "Records": [
            record("input/arrivals/a/1.csv"),
            record("input/arrivals/a/1.csv", event_id="dup", message_id="m-dup"),
        ]
    }
    answer = start(event, trigger=trigger, states=states, s3=s3, claims=claims)
    assert answer == {
        "batchItemFailures": [
            {"itemIdentifier": "m-input/arrivals/a/1.csv"},
            {"itemIdentifier": "m-dup"},
        ]
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[1]", r"message m: not an S3 'Object Created' event"),
        (
            json.dumps(
                {
                    "id": "e",
                    "detail-type": "Object Created",
                    "detail": {"bucket": {"name": "data"}, "object": {}},
                }
            ),
            r"message m: detail\.object\.key None is not under input/arrivals/",
        ),
        (
            json.dumps(
                {
                    "detail-type": "Object Created",
                    "detail": {"bucket": {"name": "data"}, "object": {"key": "input/arrivals/a"}},
                }
            ),
            r"message m: the event has no id",
        ),
    ],
)
def test_bad_messages_name_the_message_and_field(body, message):
    with pytest.raises(ValidationError, match=message):
        parse_arrival({"messageId": "m", "body": body}, TRIGGER)


def test_a_folder_too_large_for_one_request_starts_several_runs(monkeypatch):
    monkeypatch.setattr(arrivals, "REQUEST_BYTES", 300)
    found = [Arrival(f"m{i}", f"e{i}", f"input/arrivals/a/{i:03}.csv", f"v{i}") for i in range(40)]
    runs = [s.run for s in run_starts(found, TRIGGER)]
    assert len(runs) > 1
    assert all(len(json.dumps(r.request)) <= 300 for r in runs)
    assert [n for r in runs for n in r.request["names"]] == [f"{i:03}.csv" for i in range(40)]
    assert sorted(o for r in runs for o in r.objects) == sorted(a.object for a in found)
    assert len({r.name for r in runs}) == len(runs)


def test_a_run_whose_record_would_pass_a_dynamodb_item_starts_several_runs(monkeypatch):
    """A run's record keeps its request and object versions: many versions of few names
    split the folder too."""
    monkeypatch.setattr(arrivals, "RECORD_BYTES", 2_000)
    found = [
        Arrival(f"m{i}-{v}", f"e{i}-{v}", f"input/arrivals/a/{i}.csv", f"{v:018}")
        for i in range(4)
        for v in range(20)
    ]
    starts = run_starts(found, TRIGGER)
    assert [s.run.request["names"] for s in starts] == [[f"{i}.csv"] for i in range(4)]
    assert all(len(s.message_ids) == 20 for s in starts)


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("input/arrivals/day 1/a+b=c.csv", "input/arrivals/day 1/a+b=c.csv"),  # encoded event
        ("input/arrivals/day+1/a%2Bb%3Dc.csv", "input/arrivals/day+1/a%2Bb%3Dc.csv"),  # raw
    ],
)
def test_an_event_key_names_the_object_that_exists_decoded_or_as_sent(
    states, s3, claims, stored, expected
):
    """The event says "input/arrivals/day+1/a%2Bb%3Dc.csv": S3's URL encoding of "day 1/a+b=c.csv",
    or, sent raw, a key of its own. The run names the one the bucket holds."""
    s3.put_object(Bucket=TRIGGER.bucket, Key=stored, Body=b"1\n")
    event = {"Records": [record("input/arrivals/day+1/a%2Bb%3Dc.csv")]}
    answer = start(event, states=states, s3=s3, claims=claims)
    assert answer == {"batchItemFailures": []}
    (request,) = started(states).values()
    folder, name = expected.rsplit("/", 1)
    assert request["input"] == f"s3://data/{folder}/" and request["names"] == [name]


def test_a_key_decoding_leaves_alone_is_not_looked_up():
    assert resolve_keys(["input/arrivals/a.csv"], lambda _k: pytest.fail("looked up")) == {
        "input/arrivals/a.csv": "input/arrivals/a.csv"
    }


def test_one_key_settles_the_encoding_of_a_batch():
    """The first key whose raw reading exists and decoded one does not says the batch's
    keys are raw: no other key is looked up."""
    keys = ["in/a+1.csv", "in/b+2.csv", "in/c%20d.csv"]
    looked_up = []

    def exists(key):
        looked_up.append(key)
        return key == "in/a+1.csv"

    assert resolve_keys(keys, exists) == {k: k for k in keys}
    assert looked_up == ["in/a 1.csv", "in/a+1.csv"]


def test_keys_are_decoded_when_no_probe_settles_it():
    """Neither reading of the probed keys exists (or both do): AWS's rule, decoded."""
    keys = [f"in/x+{i}.csv" for i in range(5)]
    looked_up = []
    assert resolve_keys(keys, lambda k: looked_up.append(k) or False) == {
        k: k.replace("+", " ") for k in keys
    }
    assert len(looked_up) == 2 * arrivals.KEY_PROBES


def test_folder_markers_start_nothing():
    assert run_starts([Arrival("m", "e", "input/arrivals/new/", "v")], TRIGGER) == []


def test_hidden_and_underscore_arrivals_start_nothing_r4():
    """What a Spark job writes besides its data is no input (R4: a key prefix or a
    ManifestFile selects the input objects): its _SUCCESS, .crc files and _temporary/."""
    keys = [
        "input/arrivals/day1/part-00000.csv",
        "input/arrivals/day1/_SUCCESS",
        "input/arrivals/day1/.part-00000.csv.crc",
        "input/arrivals/day1/_temporary/0/part-00001.csv",
        "input/arrivals/_staging/a.csv",
    ]
    starts = run_starts([Arrival(f"m{i}", f"e{i}", k, "v") for i, k in enumerate(keys)], TRIGGER)
    assert [(s.run.request["input"], s.run.request["names"]) for s in starts] == [
        ("s3://data/input/arrivals/day1/", ["part-00000.csv"])
    ]


def test_execution_names_are_valid_run_ids_and_depend_on_folder_and_object_versions():
    long = "input/arrivals/" + "x y/" * 40
    one, two = ("input/arrivals/a/1.csv", "v1"), ("input/arrivals/a/2.csv", "v1")
    name = execution_name(long, "input/arrivals/", [one])
    assert len(name) <= 80 and name.startswith("x-y-x-y")
    assert all(c.isalnum() or c in "-_" for c in name)
    folder = "input/arrivals/a/"
    assert execution_name(folder, "input/arrivals/", [one, two]) == execution_name(
        folder, "input/arrivals/", [two, one]
    )
    assert execution_name(folder, "input/arrivals/", [one]) != execution_name(
        "input/arrivals/b/", "input/arrivals/", [one]
    )
    assert execution_name(folder, "input/arrivals/", [one]) != execution_name(
        folder, "input/arrivals/", [(one[0], "v2")]
    ), "an object written again is a new arrival"


def test_a_run_another_run_took_an_object_of_is_abandoned_and_its_messages_come_back(
    states, s3, claims
):
    """Two deliveries raced for an object (EventBridge delivers an event at least once): a
    run claimed 2.csv while another run took 1.csv. The run that finds an object taken
    starts nothing, gives its claims back and reports its messages; their next delivery
    starts the objects no run took, once."""
    one, two = record("input/arrivals/a/1.csv"), record("input/arrivals/a/2.csv")
    (run,) = [s.run for s in run_starts([parse_arrival(r, TRIGGER) for r in (one, two)], TRIGGER)]
    (other,) = [s.run for s in run_starts([parse_arrival(one, TRIGGER)], TRIGGER)]
    for holder, taken in ((other, run.objects[0]), (run, run.objects[1])):
        claims.record(holder)
        assert claims.claim(holder.name, taken)

    answer = start({"Records": [one, two]}, states=states, s3=s3, claims=claims)
    assert answer == {"batchItemFailures": [{"itemIdentifier": two["messageId"]}]}
    assert claims.run(run.name)[1] == arrivals.ABANDONED
    assert claims.claimed(run.objects) == {run.objects[0]: other.name}
    assert started(states) == {other.name: other.request}

    again = start({"Records": [two]}, states=states, s3=s3, claims=claims)
    assert again == {"batchItemFailures": []}
    runs = started(states)
    assert sorted(n for r in runs.values() for n in r["names"]) == ["1.csv", "2.csv"]
    assert run.name not in runs
