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
    resolve_key,
    run_starts,
    start_arrivals,
)

REGION = "eu-west-1"
TRIGGER = Trigger(
    bucket="data",
    prefix="input/arrivals/",
    request={"merge": True},
    state_machine_arn="arn:aws:states:eu-west-1:123456789012:stateMachine:runs",
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


def started(states):
    executions = states.list_executions(stateMachineArn=TRIGGER.state_machine_arn)["executions"]
    return {
        e["name"]: json.loads(states.describe_execution(executionArn=e["executionArn"])["input"])
        for e in executions
    }


def test_a_batch_starts_one_run_per_folder_with_its_new_names(states, s3):
    keys = [f"input/arrivals/{shop}/{i}.csv" for shop in ("a", "b/2024") for i in range(3)]
    event = {"Records": [record(k) for k in [*keys, "input/arrivals/top.csv"]]}
    answer = start_arrivals(event, trigger=TRIGGER, states=states, s3=s3)
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


def test_a_redelivered_batch_starts_nothing_new(states, s3):
    event = {"Records": [record(f"input/arrivals/a/{i}.csv") for i in range(4)]}
    start_arrivals(event, trigger=TRIGGER, states=states, s3=s3)
    again = start_arrivals(
        {"Records": list(reversed(event["Records"]))}, trigger=TRIGGER, states=states, s3=s3
    )
    assert again == {"batchItemFailures": []}
    assert len(started(states)) == 1


def test_a_later_batch_for_the_same_folder_is_a_new_run_of_its_own_names(states, s3):
    start_arrivals(
        {"Records": [record("input/arrivals/a/1.csv")]}, trigger=TRIGGER, states=states, s3=s3
    )
    start_arrivals(
        {"Records": [record("input/arrivals/a/2.csv")]}, trigger=TRIGGER, states=states, s3=s3
    )
    assert sorted(r["names"] for r in started(states).values()) == [["1.csv"], ["2.csv"]]


def test_messages_that_are_no_arrival_are_reported_and_the_others_start(states, s3):
    good = record("input/arrivals/a/1.csv")
    bad = [
        {"messageId": "not-json", "body": "{oops"},
        record("input/arrivals/a/2.csv", bucket="other", message_id="other-bucket"),
        record("input/elsewhere/3.csv", message_id="other-prefix"),
    ]
    answer = start_arrivals({"Records": [good, *bad]}, trigger=TRIGGER, states=states, s3=s3)
    assert answer == {
        "batchItemFailures": [
            {"itemIdentifier": i} for i in ("not-json", "other-bucket", "other-prefix")
        ]
    }
    (request,) = started(states).values()
    assert request["names"] == ["1.csv"]


def test_a_run_that_cannot_start_reports_its_messages(states, s3):
    trigger = Trigger(**(TRIGGER.__dict__ | {"state_machine_arn": TRIGGER.state_machine_arn + "x"}))
    event = {
        "Records": [
            record("input/arrivals/a/1.csv"),
            record("input/arrivals/a/1.csv", event_id="dup", message_id="m-dup"),
        ]
    }
    answer = start_arrivals(event, trigger=trigger, states=states, s3=s3)
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
    found = [Arrival(f"m{i}", f"e{i}", f"input/arrivals/a/{i:03}.csv") for i in range(40)]
    starts = run_starts(found, TRIGGER)
    assert len(starts) > 1
    assert all(len(json.dumps(s.request)) <= 300 for s in starts)
    assert [n for s in starts for n in s.request["names"]] == [f"{i:03}.csv" for i in range(40)]
    assert sorted(m for s in starts for m in s.message_ids) == sorted(a.message_id for a in found)
    assert len({s.name for s in starts}) == len(starts)


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("input/arrivals/day 1/a+b=c.csv", "input/arrivals/day 1/a+b=c.csv"),  # encoded event
        ("input/arrivals/day+1/a%2Bb%3Dc.csv", "input/arrivals/day+1/a%2Bb%3Dc.csv"),  # raw
    ],
)
def test_an_event_key_names_the_object_that_exists_decoded_or_as_sent(states, s3, stored, expected):
    """The event says "input/arrivals/day+1/a%2Bb%3Dc.csv": S3's URL encoding of "day 1/a+b=c.csv",
    or, sent raw, a key of its own. The run names the one the bucket holds."""
    s3.put_object(Bucket=TRIGGER.bucket, Key=stored, Body=b"1\n")
    event = {"Records": [record("input/arrivals/day+1/a%2Bb%3Dc.csv")]}
    answer = start_arrivals(event, trigger=TRIGGER, states=states, s3=s3)
    assert answer == {"batchItemFailures": []}
    (request,) = started(states).values()
    folder, name = expected.rsplit("/", 1)
    assert request["input"] == f"s3://data/{folder}/" and request["names"] == [name]


def test_a_key_decoding_leaves_alone_is_not_looked_up():
    assert resolve_key("input/arrivals/a.csv", lambda _k: pytest.fail("looked up")) == (
        "input/arrivals/a.csv"
    )


def test_folder_markers_start_nothing():
    assert run_starts([Arrival("m", "e", "input/arrivals/new/")], TRIGGER) == []


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
    starts = run_starts([Arrival(f"m{i}", f"e{i}", k) for i, k in enumerate(keys)], TRIGGER)
    assert [(s.request["input"], s.request["names"]) for s in starts] == [
        ("s3://data/input/arrivals/day1/", ["part-00000.csv"])
    ]


def test_execution_names_are_valid_run_ids_and_depend_on_folder_and_events():
    long = "input/arrivals/" + "x y/" * 40
    name = execution_name(long, "input/arrivals/", ["e1"])
    assert len(name) <= 80 and name.startswith("x-y-x-y")
    assert all(c.isalnum() or c in "-_" for c in name)
    assert execution_name("input/arrivals/a/", "input/arrivals/", ["e1", "e2"]) == execution_name(
        "input/arrivals/a/", "input/arrivals/", ["e2", "e1"]
    )
    assert execution_name("input/arrivals/a/", "input/arrivals/", ["e1"]) != execution_name(
        "input/arrivals/b/", "input/arrivals/", ["e1"]
    )
