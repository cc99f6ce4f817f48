"""Each correction of tests/support/offline/moto_fixes.py on a state machine of its own: with
it alone, moto behaves as AWS does; without it, moto still diverges (when that fails, moto was
fixed and the correction can go)."""

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import boto3
import moto
import pytest
from botocore.exceptions import ClientError
from moto.stepfunctions.parser.asl.component import eval_component

from tests.support.offline import MOTO_CONFIG, REGION
from tests.support.offline.moto_fixes import (
    CORRECTIONS,
    copy_source_if_match,
    definite_paths,
    json_lines_item_reader,
    keyword_path_bindings,
    map_result_files,
    parallel_states_errors,
    retries_counted_per_child,
    tolerated_failures,
)
from tests.support.offline.stack import ended
from tests.support.offline.template import ACCOUNT

QUEUE = "callbacks"
QUEUE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{QUEUE}"
BUCKET = "fix-items"


@dataclass(frozen=True)
class Case:
    correction: Callable[[], AbstractContextManager[Any]]
    definition: dict[str, Any]
    state: dict[str, Any]
    aws: dict[str, Any]  # the execution's status and output on AWS
    objects: dict[str, bytes] = field(default_factory=dict)  # key -> body, in BUCKET
    # A prefix of BUCKET: the run also reports the names of the objects written below it.
    written: str | None = None
    sent: bool = False  # the run also reports how many messages reached QUEUE
    # What the run is made under, with and without the correction.
    under: Callable[[], AbstractContextManager[Any]] = nullcontext


@contextmanager
def slow_heap_keys() -> Iterator[None]:
    """moto's heap keys made 0.2 s late: Map children that fail at once all make one."""
    made = eval_component.long_uid

    def late() -> str:
        time.sleep(0.2)
        return made()

    with mock.patch.object(eval_component, "long_uid", late):
        yield


def parallel(
    branch: dict[str, Any], then: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """A state machine that starts with a Parallel state of ``fields`` whose one branch is the
    state ``branch``, followed by the states ``then``."""
    branches = [{"StartAt": "B", "States": {"B": branch}}]
    return {
        "StartAt": "P",
        "States": {"P": {"Type": "Parallel", "Branches": branches, **fields}, **(then or {})},
    }


def distributed_map(**fields: Any) -> dict[str, Any]:
    """A state machine of one Distributed Map over its input, with ``fields``, whose item 2
    fails with ``Broke``."""
    fail_two = {"Variable": "$.n", "NumericEquals": 2, "Next": "Broke"}
    processor = {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Check",
        "States": {
            "Check": {"Type": "Choice", "Choices": [fail_two], "Default": "Item"},
            "Broke": {"Type": "Fail", "Error": "Broke", "Cause": "item 2"},
            "Item": {"Type": "Pass", "End": True},
        },
    }
    return {
        "StartAt": "M",
        "States": {
            "M": {"Type": "Map", "ItemProcessor": processor, "ResultPath": None, "End": True}
            | fields
        },
    }


# A Parallel state whose branch sends a message and fails with Broke, retried once on Broke,
# then caught.
SENT_THEN_BROKE = {
    "Type": "Parallel",
    "Branches": [
        {
            "StartAt": "Send",
            "States": {
                "Send": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::sqs:sendMessage",
                    "Parameters": {"QueueUrl": QUEUE_URL, "MessageBody": "tried"},
                    "Next": "Broke",
                },
                "Broke": {"Type": "Fail", "Error": "Broke", "Cause": "always"},
            },
        }
    ],
    "Retry": [{"ErrorEquals": ["Broke"], "IntervalSeconds": 1, "MaxAttempts": 1}],
    "Catch": [{"ErrorEquals": ["Broke"], "Next": "Caught"}],
    "End": True,
}

CASES = {
    # The RunJob ResultSelector: $[0].name of the branches' outputs.
    "definite-path-below-an-index": Case(
        definite_paths,
        parallel(
            {"Type": "Pass", "Result": {"name": "j"}, "End": True},
            ResultSelector={"name.$": "$[0].name"},
            End=True,
        ),
        {},
        {"status": "SUCCEEDED", "output": {"name": "j"}},
    ),
    # The CreateProcessingJob task's "RoleArn.$".
    "keyword-named-binding": Case(
        keyword_path_bindings,
        {
            "StartAt": "P",
            "States": {"P": {"Type": "Pass", "Parameters": {"RoleArn.$": "$.role"}, "End": True}},
        },
        {"role": "arn:r"},
        {"status": "SUCCEEDED", "output": {"RoleArn": "arn:r"}},
    ),
    # A Failed job's States.TaskFailed reaching the RunJob Catch; here a callback task that
    # nobody answers fails its branch with States.Timeout.
    "parallel-branch-failing-with-a-states-error": Case(
        parallel_states_errors,
        parallel(
            {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {
                    "QueueUrl": QUEUE_URL,
                    "MessageBody": {"token.$": "$$.Task.Token"},
                },
                "TimeoutSeconds": 1,
                "End": True,
            },
            Catch=[{"ErrorEquals": ["States.Timeout"], "Next": "Caught"}],
            End=True,
            then={"Caught": {"Type": "Pass", "Parameters": {"error.$": "$.Error"}, "End": True}},
        ),
        {},
        {"status": "SUCCEEDED", "output": {"error": "States.Timeout"}},
    ),
    # The SplitInputs Map reading Plan's split tasks, one JSON object per line.
    "json-lines-item-file": Case(
        json_lines_item_reader,
        {
            "StartAt": "M",
            "States": {
                "M": {
                    "Type": "Map",
                    "ItemReader": {
                        "Resource": "arn:aws:states:::s3:getObject",
                        "ReaderConfig": {"InputType": "JSONL"},
                        "Parameters": {"Bucket": BUCKET, "Key": "items.jsonl"},
                    },
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "Item",
                        "States": {"Item": {"Type": "Pass", "End": True}},
                    },
                    "MaxConcurrency": 1,
                    "End": True,
                }
            },
        },
        {},
        {"status": "SUCCEEDED", "output": [{"input": "s3://b/a.csv"}, {"input": "s3://b/b.csv"}]},
        objects={"items.jsonl": b'{"input": "s3://b/a.csv"}\n{"input": "s3://b/b.csv"}\n'},
    ),
    # The CountShards Map's results, read by Verify: JSON Lines of compact results, a failed
    # child written whole, listed in the manifest.
    "map-result-files": Case(
        map_result_files,
        distributed_map(
            ResultWriter={
                "Resource": "arn:aws:states:::s3:putObject",
                "Parameters": {"Bucket": BUCKET, "Prefix": "results"},
                "WriterConfig": {"OutputType": "JSONL", "Transformation": "COMPACT"},
            },
            ToleratedFailurePercentage=100.0,
        ),
        [{"n": 1}, {"n": 2}, {"n": 3}],
        {
            "status": "SUCCEEDED",
            "output": [{"n": 1}, {"n": 2}, {"n": 3}],
            "written": {
                "FAILED_0.json": [{"Input": {"n": 2}, "Error": "Broke", "Cause": "item 2"}],
                "SUCCEEDED_0.json": [{"n": 1}, {"n": 3}],
                "manifest.json": {"FAILED": 1, "PENDING": 0, "SUCCEEDED": 1},
            },
        },
        written="results/",
    ),
    # No tolerated failure: a failed split, check or scoring fails its Map with the
    # threshold's error, not the child's.
    "tolerated-failures": Case(
        tolerated_failures,
        distributed_map(),
        [{"n": 1}, {"n": 2}, {"n": 3}],
        {"status": "FAILED", "error": "States.ExceedToleratedFailureThreshold"},
    ),
    # MergeObject failing for two inputs at once: each tried 1 + 2 times. Here 8 children each
    # send a message and fail, retried once: 16 messages.
    "retries-counted-per-child": Case(
        retries_counted_per_child,
        {
            "StartAt": "M",
            "States": {
                "M": {
                    "Type": "Map",
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "Try",
                        "States": {"Try": SENT_THEN_BROKE, "Caught": {"Type": "Pass", "End": True}},
                    },
                    "End": True,
                }
            },
        },
        list(range(8)),
        {"status": "SUCCEEDED", "output": [{"Error": "Broke", "Cause": "always"}] * 8, "sent": 16},
        sent=True,
        under=slow_heap_keys,
    ),
    # SplitObject's copy of an object that needed no split, by the ETag its split measured.
    "copy-source-if-match": Case(
        copy_source_if_match,
        {
            "StartAt": "Copy",
            "States": {
                "Copy": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::aws-sdk:s3:copyObject",
                    "Parameters": {
                        "Bucket": BUCKET,
                        "Key": "copies/source",
                        "CopySource": f"{BUCKET}/source",
                        "CopySourceIfMatch": '"an-earlier-version"',
                    },
                    "ResultSelector": {"copied": True},
                    "End": True,
                },
            },
        },
        {},
        # Refused with 412 PreconditionFailed, so nothing is copied (the error is named as
        # moto's aws-sdk integration names an S3 error it does not model).
        {"status": "FAILED", "error": "s3.s3Exception"},
        objects={"source": b"a newer version"},
    ),
}


def written_results(s3: Any, prefix: str) -> dict[str, Any]:
    """The objects below ``prefix`` by name: a manifest as its result files' count by status,
    a result file as its JSON Lines (a failed child's Input parsed, its metadata left out)."""
    written: dict[str, Any] = {}
    for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []):
        body = s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
        name = item["Key"].rsplit("/", 1)[-1]
        if name == "manifest.json":
            files = json.loads(body)["ResultFiles"]
            written[name] = {status: len(listed) for status, listed in files.items()}
            continue
        lines = [json.loads(line) for line in body.splitlines()]
        written[name] = [
            {"Input": json.loads(line["Input"]), "Error": line["Error"], "Cause": line["Cause"]}
            if isinstance(line, dict) and "Error" in line
            else line
            for line in lines
        ]
    return written


def run(case: Case, corrected: bool) -> dict[str, Any]:
    """The status and output of ``case``'s definition run on moto, with or without its
    correction (status REFUSED: moto refused the definition), and the objects it wrote where
    the case says."""
    with (
        moto.mock_aws(config=MOTO_CONFIG),
        case.under(),
        case.correction() if corrected else nullcontext(),
    ):
        sqs = boto3.client("sqs", region_name=REGION)
        sqs.create_queue(QueueName=QUEUE)
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        for key, body in case.objects.items():
            s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        sfn = boto3.client("stepfunctions", region_name=REGION)
        try:
            machine = sfn.create_state_machine(
                name="fix",
                definition=json.dumps(case.definition),
                roleArn=f"arn:aws:iam::{ACCOUNT}:role/fix",
            )["stateMachineArn"]
        except ClientError as exc:  # AWS accepts every case's definition
            return {"status": "REFUSED", "output": str(exc)}
        arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps(case.state))
        described = ended(sfn, arn["executionArn"], timeout=20)
        output = described.get("output")
        if described["status"] == "FAILED":
            return {"status": "FAILED", "error": described.get("error")}
        result = {"status": described["status"], "output": json.loads(output) if output else None}
        if case.written is not None:
            result["written"] = written_results(s3, case.written)
        if case.sent:
            counted = sqs.get_queue_attributes(
                QueueUrl=QUEUE_URL, AttributeNames=["ApproximateNumberOfMessages"]
            )
            result["sent"] = int(counted["Attributes"]["ApproximateNumberOfMessages"])
        return result


def test_every_correction_has_a_case():
    assert {case.correction for case in CASES.values()} == set(CORRECTIONS)


@pytest.mark.parametrize("name", CASES)
def test_with_the_correction_moto_behaves_as_aws(name):
    case = CASES[name]
    assert run(case, corrected=True) == case.aws


@pytest.mark.parametrize("name", CASES)
def test_without_it_moto_still_diverges(name):
    case = CASES[name]
    assert run(case, corrected=False) != case.aws
