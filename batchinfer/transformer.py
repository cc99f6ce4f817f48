"""``Transformer``: the SageMaker Python SDK's ``sagemaker.transformer.Transformer``, run
on this machine without Docker.

A script written for the SDK runs with two lines changed: the import, and ``model_name``,
which names the local model (a directory or ``model.tar.gz``; or give ``model_data``).
The constructor and ``transform`` take the SDK's arguments and map them to the job's
settings (``strategy`` -> BatchStrategy, ``max_payload`` -> MaxPayloadInMB, ``env`` ->
Environment, ``model_client_config`` -> the invocation timeout and retries). Arguments that
only matter to AWS (tags, KMS keys, the AMI version, the session, experiments) are accepted
and have no effect here; arguments that would change the output and that a local run does
not do are refused with a ValidationError.
"""

import sys
import threading
from collections.abc import Callable, Mapping
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchinfer import api
from batchinfer.errors import ValidationError
from batchinfer.transform.settings import validate_job_name

if TYPE_CHECKING:
    from batchinfer.engine.job_result import JobResult
    from batchinfer.engine.job_spec import LocalJob

# The SDK's data_type values a local run reads (R4: a key prefix or a ManifestFile).
DATA_TYPES = ("S3Prefix", "ManifestFile")
# model_client_config's keys (R20: ModelClientConfig bounds timeouts and retries).
MODEL_CLIENT_KEYS = ("InvocationsTimeoutInSeconds", "InvocationsMaxRetries")
FILE_SCHEME = "file://"


class Transformer:
    """A Batch Transform job's settings, run by :meth:`transform` on this machine.

    ``model_name`` or ``model_data``: the model, a local directory or ``model.tar.gz``
    (``file://`` URIs too); ``output_path``: the directory the ``<input>.out`` files go to.
    ``engine`` (not the SDK's): ``transform`` (model servers, as SageMaker runs them) or
    ``processing`` (the handlers in-process). The rest are the SDK's arguments.
    ``result`` is the last job's :class:`~batchinfer.engine.job_result.JobResult`."""

    def __init__(
        self,
        model_name: str | PathLike[str] | None = None,
        instance_count: int = 1,
        instance_type: str = "ml.m5.xlarge",
        strategy: str | None = None,
        assemble_with: str | None = None,
        output_path: str | PathLike[str] | None = None,
        output_kms_key: str | None = None,
        accept: str | None = None,
        max_concurrent_transforms: int | None = None,
        max_payload: int | None = None,
        tags: Any = None,
        env: Mapping[str, str] | None = None,
        base_transform_job_name: str | None = None,
        sagemaker_session: Any = None,
        volume_kms_key: str | None = None,
        transform_ami_version: str | None = None,
        *,
        model_data: str | PathLike[str] | None = None,
        engine: str = "transform",
    ) -> None:
        model = model_data if model_data is not None else model_name
        if model is None or (model_name is not None and model_data is not None):
            raise ValidationError(
                "Transformer: give the local model as model_name or model_data (a directory "
                "or model.tar.gz), one of them"
            )
        self._model = model
        self.model_name = model_name
        self.model_data = model_data
        self.instance_count = instance_count
        self.instance_type = instance_type
        self.strategy = strategy
        self.assemble_with = assemble_with
        self.output_path = output_path
        self.output_kms_key = output_kms_key
        self.accept = accept
        self.max_concurrent_transforms = max_concurrent_transforms
        self.max_payload = max_payload
        self.tags = tags
        self.env = dict(env or {})
        self.base_transform_job_name = base_transform_job_name
        self.sagemaker_session = sagemaker_session
        self.volume_kms_key = volume_kms_key
        self.transform_ami_version = transform_ami_version
        self.engine = engine
        self.latest_job_name: str | None = None
        self.result: JobResult | None = None
        self._running: threading.Thread | None = None
        self._error: BaseException | None = None

    def transform(
        self,
        data: str | PathLike[str],
        data_type: str = "S3Prefix",
        content_type: str | None = None,
        compression_type: str | None = None,
        split_type: str | None = None,
        job_name: str | None = None,
        input_filter: str | None = None,
        output_filter: str | None = None,
        join_source: str | None = None,
        experiment_config: Mapping[str, str] | None = None,
        model_client_config: Mapping[str, int] | None = None,
        batch_data_capture_config: Any = None,
        wait: bool = True,
        logs: bool = True,
    ) -> None:
        """Run the job over ``data`` (a file, a directory or, with ``data_type='ManifestFile'``,
        a ManifestFile) into ``output_path``, as ``batchinfer run`` would with these settings.
        With ``wait`` it returns when the job is done (raising
        :class:`~batchinfer.api.JobFailed` if an input failed); else :meth:`wait` does.
        ``logs`` prints each stage to stderr."""
        if self._running is not None:
            raise ValidationError("transform: a job is running; wait() for it first")
        if batch_data_capture_config is not None:
            raise ValidationError(
                "batch_data_capture_config: a local run captures no data; leave it out"
            )
        if self.output_path is None:
            raise ValidationError("output_path: a local run needs the directory to write to")
        if job_name is not None:
            validate_job_name(job_name)
        self._check_data_type(data, data_type)
        client = _client_config(model_client_config)
        settings = api.TransformKeywords(
            content_type=content_type,
            accept=self.accept,
            split_type=split_type,
            batch_strategy=self.strategy,
            max_payload_mb=self.max_payload,
            max_concurrent_transforms=self.max_concurrent_transforms,
            assemble_with=self.assemble_with,
            join_source=join_source,
            input_filter=input_filter,
            output_filter=output_filter,
            compression_type=compression_type,
            instance_count=self.instance_count,
            instance_type=self.instance_type,
            environment=self.env,
            invocations_timeout_seconds=client.get("InvocationsTimeoutInSeconds"),
            invocations_max_retries=client.get("InvocationsMaxRetries"),
        )
        job = api.local_job(
            _local(data),
            output=_local(self.output_path),
            model=_local(self._model),
            engine=self.engine,
            **settings,
        )
        self.latest_job_name = job_name or self.base_transform_job_name
        self.result, self._error = None, None
        on_stage = _log_stage if logs else None
        if wait:
            self.result = api.run_local_job(job, on_stage=on_stage)
            return
        self._running = threading.Thread(target=self._run, args=(job, on_stage), daemon=True)
        self._running.start()

    def wait(self, logs: bool = True) -> None:
        """Return when the job :meth:`transform` started is done; raise what it raised."""
        if self._running is None:
            if self.result is None:
                raise ValidationError("wait: no transform job was started; call transform()")
            return
        self._running.join()
        self._running = None
        if self._error is not None:
            raise self._error

    def _run(self, job: "LocalJob", on_stage: Callable[[str], None] | None) -> None:
        try:
            self.result = api.run_local_job(job, on_stage=on_stage)
        except BaseException as exc:  # raised again by wait()
            self._error = exc

    @staticmethod
    def _check_data_type(data: str | PathLike[str], data_type: str) -> None:
        """R4: ``S3Prefix`` names the inputs, ``ManifestFile`` a manifest listing them."""
        from batchinfer.engine.inputs import is_manifest

        if data_type not in DATA_TYPES:
            raise ValidationError(
                f"data_type: {data_type!r} is not read by a local run; allowed: "
                f"{', '.join(DATA_TYPES)}"
            )
        manifest = is_manifest(Path(_local(data)))
        if data_type == "ManifestFile" and not manifest:
            raise ValidationError(
                f"data_type 'ManifestFile': {data} is not a ManifestFile (named *.manifest "
                "or *.manifest.json)"
            )
        if data_type == "S3Prefix" and manifest:
            raise ValidationError(
                f"data_type 'S3Prefix': {data} is a ManifestFile; pass data_type='ManifestFile'"
            )


def _client_config(config: Mapping[str, int] | None) -> Mapping[str, int]:
    """``config`` (the SDK's model_client_config) if it has only keys a job takes."""
    for key in config or {}:
        if key not in MODEL_CLIENT_KEYS:
            raise ValidationError(
                f"model_client_config: unknown key {key!r}; known keys: "
                f"{', '.join(MODEL_CLIENT_KEYS)}"
            )
    return config or {}


def _local(location: str | PathLike[str]) -> str:
    """A location as ``batchinfer run`` takes it: a ``file://`` URI as its path, else as
    given (an ``s3://`` URI stays a URI)."""
    return str(location).removeprefix(FILE_SCHEME)


def _log_stage(stage: str) -> None:
    print(f"{stage}…", file=sys.stderr)
