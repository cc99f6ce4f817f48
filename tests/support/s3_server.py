"""A real S3 endpoint for the tests of local jobs over s3://: moto's server on a free
localhost port, which the CLI reaches through ``AWS_ENDPOINT_URL`` as it would any S3, in
this process or in a subprocess."""

from collections.abc import Iterator
from typing import Any
from urllib.request import Request, urlopen

import boto3
import pytest
from moto.server import ThreadedMotoServer

REGION = "us-east-1"
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """The URL of a moto server started for the session."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: Any) -> str:
    """This test's environment pointed at the server (fake credentials, no profile or AWS
    configuration file of the user's), with the server emptied first and boto3's default
    session made afresh, as in a new process; returns its URL."""
    urlopen(Request(f"{s3_endpoint}/moto-api/reset", method="POST"), timeout=10).close()
    nowhere = tmp_path_factory.mktemp("aws-config") / "none"
    for name, value in {
        **FAKE_CREDENTIALS,
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": str(nowhere),
        "AWS_SHARED_CREDENTIALS_FILE": str(nowhere),
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    return s3_endpoint


@pytest.fixture
def s3(s3_env: str) -> Any:
    """A client of the server, as the job's own is made."""
    return boto3.client("s3")
