"""The SageMaker Python SDK's local-mode transform job (sagemaker-core: ``LocalSession``,
``Transformer``, ``_LocalTransformJob``) with only its Docker container replaced by
``batchinfer serve`` on a free localhost port.

Everything else is the SDK's own: how it lists the input, splits and batches records, calls
``/execution-parameters`` and ``/invocations``, assembles and names the outputs.
"""

import io
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

import boto3
import sagemaker.core.local.data as sdk_data
import sagemaker.core.local.entities as sdk_entities
import sagemaker.core.local.local_session as sdk_session
import sagemaker.core.telemetry.telemetry_logging as sdk_telemetry
from sagemaker.core.local import LocalSession
from sagemaker.core.transformer import Transformer

from batchinfer.serving.launcher import ServerProcess, start_server
from batchinfer.units import MIB
from tests.support.aws import REGION

START_TIMEOUT = 60.0
HOST = "127.0.0.1"
# Settings by batchinfer's name -> the Transformer constructor's keyword.
TRANSFORMER_KEYWORDS = {
    "batch_strategy": "strategy",
    "assemble_with": "assemble_with",
    "accept": "accept",
    "max_payload_mb": "max_payload",
}
# Settings by batchinfer's name -> Transformer.transform's keyword.
TRANSFORM_KEYWORDS = {
    "content_type": "content_type",
    "split_type": "split_type",
    "compression_type": "compression_type",
    "input_filter": "input_filter",
    "output_filter": "output_filter",
    "join_source": "join_source",
}


class ServedContainer:
    """Stands in for ``sagemaker.core.local.image._SageMakerContainer``: ``serve`` starts
    ``batchinfer serve`` for the model directory of a ``file://`` ModelDataUrl with the
    environment the SDK built, waits until it is healthy (C4) and points the session's
    ``local.serving_port`` (and so its runtime client) at it."""

    # Every server started, so that a job the SDK abandons (it raises before its own
    # stop_serving) leaves no server running.
    started: ClassVar[list[ServerProcess]] = []

    def __init__(
        self, instance_type: str, instance_count: int, image: str, sagemaker_session: Any
    ) -> None:
        self.session = sagemaker_session
        self.server: ServerProcess | None = None

    def serve(self, model_data_url: str, environment: Mapping[str, str]) -> None:
        if not model_data_url.startswith("file://"):
            raise ValueError(f"ModelDataUrl: {model_data_url!r} is not a file:// directory")
        self.server = start_server(Path(model_data_url.removeprefix("file://")), env=environment)
        ServedContainer.started.append(self.server)
        self.server.wait_healthy(START_TIMEOUT)
        local = {**self.session.config["local"], "serving_port": self.server.port}
        self.session.config = {**self.session.config, "local": local}

    def stop_serving(self) -> None:
        if self.server is not None:
            self.server.stop()


@dataclass(frozen=True)
class Exchange:
    """One ``/invocations`` call of the SDK: the request body, the response's status and body."""

    request: bytes
    status: int
    response: bytes


@dataclass
class SdkRun:
    """What one SDK local transform job did: its name (new for each job, as the platform
    requires), its DescribeTransformJob answer and its calls."""

    job_name: str = field(default_factory=lambda: f"oracle-{uuid.uuid4().hex[:12]}")
    description: dict[str, Any] = field(default_factory=dict)
    exchanges: list[Exchange] = field(default_factory=list)


@contextmanager
def served_by_batchinfer() -> Iterator[None]:
    """The SDK's local mode with ``batchinfer serve`` as its container, on 127.0.0.1 (no
    ``docker context inspect``); every server it started is stopped on the way out."""
    try:
        with (
            mock.patch.object(sdk_entities, "_SageMakerContainer", ServedContainer),
            mock.patch.object(sdk_entities, "get_docker_host", lambda: HOST),
            mock.patch.object(sdk_session, "get_docker_host", lambda: HOST),
            # No telemetry: the suite reaches no network. (Opting out through a
            # sagemaker_config would have the SDK validate it against its schema at every
            # config lookup, seconds per job.)
            mock.patch.object(sdk_telemetry, "_send_telemetry_request", lambda *a, **k: None),
        ):
            yield
    finally:
        while ServedContainer.started:
            ServedContainer.started.pop().stop()


@contextmanager
def byte_sized_batches() -> Iterator[None]:
    """Correction for departure R7: the SDK measures a MultiRecord batch with
    ``sys.getsizeof`` (49 bytes of str overhead, strict ``<``); the platform counts the
    request body's bytes, up to and including MaxPayloadInMB MiB."""

    def within_limit(payload: str | bytes, size: int) -> bool:
        body = payload.encode() if isinstance(payload, str) else payload
        return size == 0 or len(body) <= size * MIB

    with mock.patch.object(sdk_data, "_payload_size_within_limit", within_limit):
        yield


def _recording(session: LocalSession, run: SdkRun) -> None:
    """Wrap the session's runtime client so every call's request and response are kept."""
    client = session.sagemaker_runtime_client
    invoke = client.invoke_endpoint

    def invoke_endpoint(Body: str | bytes, *args: Any, **kwargs: Any) -> dict[str, Any]:
        response = invoke(Body, *args, **kwargs)
        data = response["Body"].read()
        response["Body"].close()
        request = Body.encode() if isinstance(Body, str) else bytes(Body)
        status = response["ResponseMetadata"]["HTTPStatusCode"]
        run.exchanges.append(Exchange(request, status, data))
        return {**response, "Body": io.BytesIO(data)}

    client.invoke_endpoint = invoke_endpoint


def sdk_transform(model_dir: Path, data: str, output: str, **settings: Any) -> SdkRun:
    """Run one SDK local transform job of ``data`` (file:// or s3://) into ``output`` with
    the model directory served by batchinfer. ``settings`` use batchinfer's names
    (``batch_strategy``, ``max_payload_mb``, ``split_type``...)."""
    unknown = set(settings) - set(TRANSFORMER_KEYWORDS) - set(TRANSFORM_KEYWORDS)
    if unknown:
        raise ValueError(f"settings the SDK oracle does not pass: {sorted(unknown)}")
    run = SdkRun()
    job_name = run.job_name
    with served_by_batchinfer(), tempfile.TemporaryDirectory(prefix="sdk-local-") as root:
        session = LocalSession(boto_session=boto3.Session(region_name=REGION))
        # The SDK's working and download directories go below ``root``, removed at the end.
        session.config = {"local": {"local_code": True, "container_root": root}}
        _recording(session, run)
        session.sagemaker_client.create_model(
            ModelName=job_name,
            PrimaryContainer={
                "Image": "batchinfer:local",
                "ModelDataUrl": f"file://{model_dir}",
                "Environment": {},
            },
        )
        transformer = Transformer(
            model_name=job_name,
            instance_count=1,
            instance_type="local",
            output_path=output,
            sagemaker_session=session,
            **{
                TRANSFORMER_KEYWORDS[k]: v for k, v in settings.items() if k in TRANSFORMER_KEYWORDS
            },
        )
        transformer.transform(
            data,
            job_name=job_name,
            wait=True,
            logs=False,
            **{TRANSFORM_KEYWORDS[k]: v for k, v in settings.items() if k in TRANSFORM_KEYWORDS},
        )
        run.description = session.sagemaker_client.describe_transform_job(job_name)
    return run
