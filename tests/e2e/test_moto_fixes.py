"""Each correction of tests/support/offline/moto_fixes.py on a state machine of its own: with
it, moto behaves as AWS does; without it, moto still diverges (when this fails, moto was
fixed and the correction can go)."""

import json
import time
from contextlib import nullcontext
from unittest import mock

import boto3
import moto
import pytest
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
    CustomErrorName,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl

from tests.support.offline import MOTO_CONFIG, REGION, FailInputs
from tests.support.offline.moto_fixes import corrected


def run(definition: dict, state: dict, fixed: bool) -> dict:
    """Run ``definition`` on moto with ``state`` as input; its status and output."""
    with moto.mock_aws(config=MOTO_CONFIG), corrected() if fixed else nullcontext():
        sfn = boto3.client("stepfunctions", region_name=REGION)
        arn = sfn.create_state_machine(
            name="fix",
            definition=json.dumps(definition),
            roleArn="arn:aws:iam::123456789012:role/fix",
        )["stateMachineArn"]
        execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(state))
        deadline = time.monotonic() + 20
        while (described := sfn.describe_execution(executionArn=execution["executionArn"]))[
            "status"
        ] == "RUNNING":
            assert time.monotonic() < deadline, "the execution did not end"
            time.sleep(0.05)
        output = described.get("output")
        return {"status": described["status"], "output": json.loads(output) if output else None}


PARALLEL_RESULT = {
    "StartAt": "P",
    "States": {
        "P": {
            "Type": "Parallel",
            "Branches": [
                {
                    "StartAt": "B",
                    "States": {"B": {"Type": "Pass", "Result": {"name": "j"}, "End": True}},
                }
            ],
            "ResultSelector": {"name.$": "$[0].name"},
            "End": True,
        }
    },
}
KEYWORD_BINDING = {
    "StartAt": "P",
    "States": {"P": {"Type": "Pass", "Parameters": {"RoleArn.$": "$.role"}, "End": True}},
}
CASES = {
    "definite-path-below-an-index": (PARALLEL_RESULT, {}, {"name": "j"}),
    "keyword-named-binding": (KEYWORD_BINDING, {"role": "arn:r"}, {"RoleArn": "arn:r"}),
}


@pytest.mark.parametrize("case", CASES)
def test_with_the_correction_moto_behaves_as_aws(case):
    definition, state, expected = CASES[case]
    assert run(definition, state, fixed=True) == {"status": "SUCCEEDED", "output": expected}


@pytest.mark.parametrize("case", CASES)
def test_without_it_moto_still_diverges(case):
    definition, state, expected = CASES[case]
    assert run(definition, state, fixed=False) != {"status": "SUCCEEDED", "output": expected}


def test_a_parallel_failing_with_a_states_error_needs_its_correction(stack):
    """A Failed job fails the RunJob branch with States.TaskFailed. With moto's own Parallel
    the execution crashes (States.Runtime: a custom error name may not start with States.);
    with the correction the Catch takes it and Verify resubmits the lost shard, as
    test_failures shows."""
    stack.put("input/p/a.csv", b"1,2\n")
    stack.jobs.faults.append(FailInputs(1))
    with mock.patch.object(branches_decl, "CustomErrorName", CustomErrorName):
        execution = stack.run({"input": f"s3://{stack.bucket}/input/p/"}, "p")
    assert execution.status == "FAILED" and execution.error == "States.Runtime"
    assert "MUST NOT begin with the prefix 'States.'" in execution.cause
