"""AWS failures of ``submit``, ``status`` and ``runs`` are one ``error:`` line that says what
to do, with the exit code batchinfer.errors documents, and never a traceback."""

import os
import socket

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError

from batchinfer.cloud.aws_errors import user_error
from batchinfer.errors import AwsUnreachable, CredentialsMissing
from batchinfer.pipeline.contract import stack_outputs
from tests.support.aws import create_output_stack
from tests.support.cli import run_cli

from .conftest import REGION, STACK

COMMANDS = {
    "submit": ("submit", "--stack", STACK, "--input", "s3://test-data/input/"),
    "status": ("status", "r1", "--stack", STACK),
    "runs": ("runs", "--stack", STACK),
}


@pytest.fixture
def bare_aws(tmp_path, monkeypatch):
    """No AWS settings at all: no AWS_* variables, empty config and credentials files, no
    instance metadata."""
    for name in [n for n in os.environ if n.startswith("AWS_")] + ["BATCHINFER_STACK"]:
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "empty"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def _one_error_line(printed: str) -> str:
    assert "Traceback" not in printed
    lines = printed.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), printed
    return lines[0]


def _cli(capsys, args: tuple[str, ...]) -> tuple[int, str]:
    code, printed = run_cli(capsys, *args)
    return code, _one_error_line(printed)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_region_says_to_set_one_exit_4(bare_aws, capsys, command):
    code, line = _cli(capsys, COMMANDS[command])
    assert code == 4
    assert "no AWS region: set --region or AWS_REGION" in line


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_credentials_says_how_to_configure_them_exit_5(bare_aws, capsys, command):
    code, line = _cli(capsys, (*COMMANDS[command], "--region", REGION))
    assert code == 5
    assert "Unable to locate credentials" in line
    assert line.endswith("configure credentials (aws configure / AWS_PROFILE)")


def test_partial_credentials_name_the_missing_variable_exit_5(bare_aws, capsys):
    bare_aws.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    bare_aws.setenv("AWS_REGION", REGION)
    code, line = _cli(capsys, COMMANDS["runs"])
    assert code == 5
    assert "AWS_SECRET_ACCESS_KEY" in line and "aws configure / AWS_PROFILE" in line


def test_an_unknown_profile_is_a_credentials_error_exit_5(bare_aws, capsys):
    bare_aws.setenv("AWS_PROFILE", "nobody")
    code, line = _cli(capsys, (*COMMANDS["status"], "--region", REGION))
    assert code == 5 and "nobody" in line


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_network_names_the_endpoint_exit_6(bare_aws, capsys, command):
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_MAX_ATTEMPTS": "1",
        "AWS_RETRY_MODE": "standard",
    }.items():
        bare_aws.setenv(name, value)
    code, line = _cli(capsys, (*COMMANDS[command], "--region", REGION))
    assert code == 6
    endpoint = f'Could not connect to the endpoint URL: "http://127.0.0.1:{port}'
    assert f"cannot reach AWS: {endpoint}" in line
    assert line.endswith("check the network, any proxy and --region")


def test_a_connect_timeout_and_refused_credentials_map_like_their_kind():
    timeout = user_error(ConnectTimeoutError(endpoint_url="https://states.eu-west-1.amazonaws.com"))
    assert isinstance(timeout, AwsUnreachable) and timeout.exit_code == 6
    assert "states.eu-west-1.amazonaws.com" in str(timeout)
    expired = ClientError(
        {"Error": {"Code": "ExpiredToken", "Message": "The security token\nhas expired"}},
        "DescribeStacks",
    )
    refused = user_error(expired, stack=STACK)
    assert isinstance(refused, CredentialsMissing) and refused.exit_code == 5
    assert str(refused) == (
        "AWS credentials refused (ExpiredToken: The security token has expired); "
        "configure credentials (aws configure / AWS_PROFILE)"
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_stack_that_does_not_exist_is_named_with_its_region_exit_7(deployed, capsys, command):
    args = tuple("no-such-stack" if arg == STACK else arg for arg in COMMANDS[command])
    code, line = _cli(capsys, args)
    assert code == 7
    assert line == (
        f"error: stack no-such-stack: does not exist in region {REGION}; check --stack "
        "(or BATCHINFER_STACK) and --region"
    )


def test_a_reused_run_id_names_the_execution_that_has_it_exit_8(deployed, capsys):
    first, _ = run_cli(capsys, *COMMANDS["submit"], "--run-id", "daily-1")
    assert first == 0
    again = (
        "submit",
        "--stack",
        STACK,
        "--input",
        "s3://test-data/input/o/",
        "--run-id",
        "daily-1",
    )
    code, line = _cli(capsys, again)
    assert code == 8
    arn = f"{deployed.state_machine_arn.replace(':stateMachine:', ':execution:')}:daily-1"
    assert line == (
        f"error: run id daily-1 already used by execution {arn}; choose another --run-id "
        "or leave it out"
    )


def test_any_other_aws_error_shows_its_operation_code_and_message_exit_9(deployed, capsys):
    outputs = {stack_outputs.TABLE_NAME: "no-such-table"}
    create_output_stack("tableless", outputs, REGION)
    code, line = _cli(capsys, ("runs", "--stack", "tableless"))
    assert code == 9
    assert line.startswith("error: AWS Query: ResourceNotFoundException: ")
