"""The ``sagemaker`` service integration of Step Functions, offline: Create*Job ``.sync``
requests checked against botocore's SageMaker model and R1, run by the local engine over
moto S3 (a split job by the ``batchinfer split`` command its container runs), answered
with the Describe*Job response (spec S1-S3), with API errors and job failures injected on
demand."""

import json
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import botocore.session
import click
import typer
from botocore.exceptions import ClientError, ParamValidationError
from botocore.validate import validate_parameters
from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
    CustomErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
    StatesErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import (
    ResourceCondition,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_aws_sdk import (  # noqa: E501
    StateTaskServiceAwsSdk,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (  # noqa: E501
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

from batchinfer import cli
from batchinfer.engine.inputs import InputFile
from batchinfer.engine.processing_engine import run_processing
from batchinfer.engine.transform_engine import run_transform
from batchinfer.errors import BatchInferError
from batchinfer.model_artifact import prepare_model_dir
from batchinfer.pipeline.contract.state import CAUSE_LIMIT
from batchinfer.pipeline.jobs.split_job import SPLIT_ENTRYPOINT
from batchinfer.transform.assemble import output_name
from batchinfer.transform.job_api import from_api
from batchinfer.transform.settings import TransformSettings, validate_job_name
from batchinfer.uris import S3Location, parse_s3_uri
from tests.support.offline.template import ACCOUNT, REGION

# API error codes SageMaker answers with a 5xx status.
SERVER_ERRORS = ("InternalFailure", "ServiceUnavailable")


@dataclass(frozen=True)
class ApiError:
    """The next Create*Job call fails with ``SageMaker.<code>`` (spec S3)."""

    code: str
    message: str = "injected by the offline harness"


@dataclass(frozen=True)
class FailInputs:
    """The next job runs, but its first ``count`` inputs end without output, as when an
    instance is lost: the job ends Failed with an InternalServerError (infrastructure)."""

    count: int = 1


@dataclass(frozen=True)
class ThrottledWait:
    """The next job runs to its end, then the .sync task's DescribeProcessingJob poll is
    throttled: Step Functions sees a transient API error after the job did its work."""


@dataclass(frozen=True)
class StopJob:
    """The next job is stopped from outside the pipeline (StopTransformJob by a person):
    it ends Stopped with no output."""


@dataclass(frozen=True)
class StopExecution:
    """The execution is stopped while the next job runs: Step Functions then stops the job
    (best effort, spec S6), which ends Stopped with no output."""


@dataclass(frozen=True)
class AnswerLost:
    """The next Create*Job call creates the job, which runs, but its answer is lost on the
    way back: Step Functions reports ``SageMaker.SdkClientException`` (no response came
    back) or the 5xx an intermediary answered with (``code``, as :class:`ApiError` has it),
    while SageMaker holds the job under the name asked for; the job meets ``then``."""

    code: str = "SdkClientException"
    message: str = (
        "Unable to execute HTTP request: Read timed out (injected by the offline harness)"
    )
    then: "RunFault | None" = None  # what the job that runs meets


@dataclass(frozen=True)
class CapacityShortage:
    """The next job ends Failed before it starts, with no output: SageMaker could not
    provision its instances. The FailureReason begins with ``CapacityError``, as AWS Batch's
    guide to SageMaker jobs describes a capacity failure
    (https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_capacity.html)."""


CAPACITY_REASON = (
    "CapacityError: Unable to provision requested ML compute capacity. "
    "Please retry using a different ML instance type."
)


@dataclass(frozen=True)
class RuntimeLimit:
    """The next processing job reaches its ``StoppingCondition.MaxRuntimeInSeconds`` and
    is stopped with no output: it ends Stopped (ProcessingStoppingCondition: "After the
    condition is met, the processing job is stopped",
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProcessingStoppingCondition.html),
    its ProcessingEndTime that limit after its CreationTime, as SageMaker's clock would
    have it. Transform jobs have no runtime limit."""


# What a job that runs meets, and every fault a Create*Job call can meet.
RunFault = FailInputs | ThrottledWait | StopJob | StopExecution | CapacityShortage | RuntimeLimit
JobFault = ApiError | AnswerLost | RunFault


@dataclass
class SageMakerJobs:
    """Transform and processing jobs done by the local engine over moto S3."""

    s3: Any
    models: dict[str, str]  # the template's model name -> ModelDataUrl
    sagemaker: Any  # moto's, where the pipeline creates runs' own models
    model_roles: dict[str, str]  # the template's model name -> its execution role ARN
    # Whose calls a job makes (its role ARN; None: the harness's own lookups), and the
    # state machine's calls of the API.
    as_role: Callable[[str | None], AbstractContextManager[Any]] = lambda _arn: nullcontext()
    on_api_call: Callable[[str, dict[str, Any]], None] = lambda _op, _params: None
    faults: list[JobFault] = field(default_factory=list)
    stop_execution: Callable[[], None] = lambda: None  # set by OfflineStack
    # Jobs whose execution is stopped while its .sync task waits for them.
    stop_while_waiting: set[str] = field(default_factory=set)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    described: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Instances of jobs running now, by instance type, and the most there ever were.
    in_flight: dict[str, int] = field(default_factory=dict)
    most_in_flight: dict[str, int] = field(default_factory=dict)
    # The names the AWS SDK integration's Describe*Job asked for, in order.
    looked_up: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._model = botocore.session.get_session().get_service_model("sagemaker")
        self._lock = threading.Lock()
        self._accepted: dict[str, tuple[str, dict[str, Any]]] = {}  # name -> (kind, request)

    @property
    def started(self) -> list[str]:
        """The jobs SageMaker accepted, in order: what the user pays for."""
        return list(self.described)

    def input_members(self, operation: str) -> set[str]:
        return set(self._model.operation_model(operation).input_shape.members)

    def modeled_errors(self, operation: str) -> set[str]:
        """The error codes botocore's model names for ``operation`` (ResourceLimitExceeded,
        ResourceInUse, ResourceNotFound)."""
        return {shape.name for shape in self._model.operation_model(operation).error_shapes}

    def create(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Run one Create*Job request to its end; its Describe*Job response."""
        kind = "Transform" if operation == "CreateTransformJob" else "Processing"
        self.on_api_call(operation, request)
        with self._lock:
            self.requests.append((operation, request))
            fault = self.faults.pop(0) if self.faults else None
            name = request.get(f"{kind}JobName", "")
            self._validate(operation, request, name)
            if isinstance(fault, ApiError):
                raise _client_error(fault.code, fault.message, operation)
            self.described[name] = {}  # the name is taken, whatever happens next
            self._accepted[name] = (kind, request)
            instance_type, count = _instances(request)
            self.in_flight[instance_type] = self.in_flight.get(instance_type, 0) + count
            self.most_in_flight[instance_type] = max(
                self.most_in_flight.get(instance_type, 0), self.in_flight[instance_type]
            )
        if isinstance(fault, AnswerLost):
            threading.Thread(
                target=self._run_to_end,
                args=(kind, name, request, fault.then, instance_type, count),
            ).start()
            if fault.code == "SdkClientException":
                raise _NoResponse(fault.message)
            raise _client_error(fault.code, fault.message, operation)
        return self._run_to_end(kind, name, request, fault, instance_type, count)

    def describe(self, operation: str, name: str) -> dict[str, Any]:
        """Describe*Job of a job SageMaker accepted: InProgress until it ends, then its
        response; ResourceNotFound for a name it never accepted."""
        self.on_api_call(operation, {operation.removeprefix("Describe") + "Name": name})
        with self._lock:
            self.looked_up.append(name)
            if name not in self._accepted:
                raise _client_error(
                    "ResourceNotFound", f"Could not find job to describe: {name}", operation
                )
            kind, request = self._accepted[name]
            return self.described[name] or {
                **request,
                f"{kind}JobStatus": "InProgress",
                f"{kind}JobArn": _job_arn(kind, name),
            }

    def _run_to_end(
        self,
        kind: str,
        name: str,
        request: dict[str, Any],
        fault: RunFault | None,
        instance_type: str,
        count: int,
    ) -> dict[str, Any]:
        try:
            return self._run(kind, name, request, fault)
        finally:
            with self._lock:
                self.in_flight[instance_type] -= count

    def _run(
        self,
        kind: str,
        name: str,
        request: dict[str, Any],
        fault: RunFault | None,
    ) -> dict[str, Any]:
        """Run the accepted job to its end; its Describe*Job response."""
        started = _millis()
        ended = None
        fail = fault.count if isinstance(fault, FailInputs) else 0
        if isinstance(fault, StopExecution):
            self.stop_while_waiting.add(name)
        if isinstance(fault, StopJob | StopExecution):
            status, reason = "Stopped", None
        elif isinstance(fault, CapacityShortage):
            status, reason = "Failed", CAPACITY_REASON
        elif isinstance(fault, RuntimeLimit):
            if kind != "Processing":
                raise AssertionError("only processing jobs have a runtime limit")
            status, reason = "Stopped", None
            ended = started + request["StoppingCondition"]["MaxRuntimeInSeconds"] * 1000
        elif kind == "Transform":
            # The harness finds the model itself: neither the job nor the state machine looks.
            with self.as_role(None):
                role = self._model_role(request["ModelName"])
                model_data_url = self._model_data(request["ModelName"])
            with self.as_role(role):
                status, reason = self._transform(request, fail, model_data_url)
        elif request["AppSpecification"].get("ContainerEntrypoint") == SPLIT_ENTRYPOINT:
            with self.as_role(request["RoleArn"]):
                status, reason = _split(request["AppSpecification"]["ContainerArguments"])
        else:
            with self.as_role(request["RoleArn"]):
                status, reason = self._processing(request, fail)
        self.on_api_call(f"Describe{kind}Job", {f"{kind}JobName": name})
        described = {
            **request,
            f"{kind}JobArn": _job_arn(kind, name),
            f"{kind}JobStatus": status,
            "CreationTime": started,
            f"{kind}StartTime" if kind == "Transform" else "ProcessingStartTime": started,
            f"{kind}EndTime" if kind == "Transform" else "ProcessingEndTime": ended or _millis(),
        }
        if reason:
            described["FailureReason"] = reason
            if kind == "Processing":
                described["ExitMessage"] = reason[:1024]
        self.described[name] = described
        if isinstance(fault, ThrottledWait):
            raise _client_error("ThrottlingException", "Rate exceeded", f"Describe{kind}Job")
        return described

    def _validate(self, operation: str, request: dict[str, Any], name: str) -> None:
        try:
            validate_parameters(request, self._model.operation_model(operation).input_shape)
            validate_job_name(name)
        except (ParamValidationError, BatchInferError) as exc:
            raise _client_error("ValidationException", str(exc), operation) from None
        if name in self.described:
            raise _client_error(
                "ResourceInUse",
                f"Job name must be unique within an AWS account and region, "
                f"and a job with this name already exists ({name})",
                operation,
            )

    def _download_manifest(self, manifest_uri: str, into: Path) -> list[InputFile]:
        """The ManifestFile's objects (R4) as local files named by their relative paths."""
        location = parse_s3_uri(manifest_uri)
        entries = json.loads(
            self.s3.get_object(Bucket=location.bucket, Key=location.key)["Body"].read()
        )
        prefix = entries[0]["prefix"]
        files = []
        for rel in entries[1:]:
            source = parse_s3_uri(prefix + rel)
            path = into / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            self.s3.download_file(source.bucket, source.key, str(path))
            files.append(InputFile(path, rel))
        return files

    def _model_dir(self, model_data_url: str, workdir: Path) -> Path:
        location = parse_s3_uri(model_data_url)
        archive = workdir / "model.tar.gz"
        self.s3.download_file(location.bucket, location.key, str(archive))
        return prepare_model_dir(archive, workdir)

    def _upload(
        self,
        files: list[InputFile],
        out_dir: Path,
        output: str,
        lost: int,
        key_id: str | None,
        *,
        every_file: bool = False,
    ) -> list[str]:
        """Upload each input's ``.out`` (R12), encrypted with the job's output key as
        SageMaker does; the first ``lost`` inputs lose theirs. ``every_file``: the other
        files the container wrote too, as a Processing job uploads its output folder."""
        target = parse_s3_uri(output)
        encryption = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": key_id} if key_id else {}
        missing = []
        names = [output_name(file.name) for file in files]
        for number, (file, name) in enumerate(zip(files, names, strict=True)):
            if number < lost or not (out_dir / name).is_file():
                missing.append(file.name)
                continue
            self._put(out_dir / name, target.child(name), encryption)
        if every_file:
            for path in sorted(out_dir.rglob("*")):
                name = path.relative_to(out_dir).as_posix()
                if path.is_file() and name not in names:
                    self._put(path, target.child(name), encryption)
        return missing

    def _put(self, path: Path, location: S3Location, encryption: dict[str, str]) -> None:
        self.s3.upload_file(str(path), location.bucket, location.key, ExtraArgs=encryption)

    def _model_role(self, name: str) -> str | None:
        """The role a transform job runs as: its model's execution role (None: no model)."""
        if name in self.model_roles:
            return self.model_roles[name]
        try:
            return self.sagemaker.describe_model(ModelName=name)["ExecutionRoleArn"]
        except ClientError:
            return None

    def _model_data(self, name: str) -> str | None:
        """The ModelDataUrl of the template's model or of a model the pipeline created
        (from model data, or from a model package), as SageMaker would resolve it."""
        if name in self.models:
            return self.models[name]
        try:
            container = self.sagemaker.describe_model(ModelName=name)["PrimaryContainer"]
        except ClientError:
            return None
        if "ModelPackageName" in container:
            package = self.sagemaker.describe_model_package(
                ModelPackageName=container["ModelPackageName"]
            )
            return package["InferenceSpecification"]["Containers"][0]["ModelDataUrl"]
        return container["ModelDataUrl"]

    def _transform(
        self, request: dict[str, Any], lost: int, model_data_url: str | None
    ) -> tuple[str, str | None]:
        if model_data_url is None:
            return "Failed", f"ClientError: Could not find model {request['ModelName']}"
        # The platform's agent writes the model server's answers as they are: records the
        # server set aside (BATCHINFER_MAX_BAD_RECORDS in the job's Environment) stay marker
        # lines in the output, for the pipeline's count to take out (R13).
        settings = platform_view(from_api(request))
        source = request["TransformInput"]["DataSource"]["S3DataSource"]
        with tempfile.TemporaryDirectory(prefix="sagemaker-transform-") as scratch:
            work = Path(scratch)
            if source["S3DataType"] != "ManifestFile":
                raise AssertionError("the pipeline's jobs read a ManifestFile")
            files = self._download_manifest(source["S3Uri"], work / "input")
            report = run_transform(
                files,
                work / "output",
                model_dir=self._model_dir(model_data_url, work),
                settings=settings,
            )
            job_output = request["TransformOutput"]
            missing = self._upload(
                files, work / "output", job_output["S3OutputPath"], lost, job_output.get("KmsKeyId")
            )
        errors = [o.error for o in report.outcomes if o.error]
        return _ending(missing, errors, "ClientError")

    def _processing(self, request: dict[str, Any], lost: int) -> tuple[str, str | None]:
        inputs = {i["InputName"]: i["S3Input"] for i in request["ProcessingInputs"]}
        arguments = request["AppSpecification"]["ContainerArguments"]
        settings = TransformSettings.from_request(
            json.loads(arguments[arguments.index("--settings-json") + 1])
            | {
                "instance_count": request["ProcessingResources"]["ClusterConfig"]["InstanceCount"],
                "environment": request.get("Environment") or {},
            }
        )
        with tempfile.TemporaryDirectory(prefix="sagemaker-processing-") as scratch:
            work = Path(scratch)
            files = self._download_manifest(inputs["data"]["S3Uri"], work / "input")
            report = run_processing(
                files,
                work / "output",
                model_dir=self._model_dir(inputs["model"]["S3Uri"], work),
                settings=settings,
                marks_in_output="--marks-in-output" in arguments,
            )
            config = request["ProcessingOutputConfig"]
            output = config["Outputs"][0]["S3Output"]["S3Uri"]
            missing = self._upload(
                files, work / "output", output, lost, config.get("KmsKeyId"), every_file=True
            )
        errors = [o.error for o in report.outcomes if o.error]
        return _ending(missing, errors, "AlgorithmError")


def platform_view(settings: TransformSettings) -> TransformSettings:
    """``settings`` as the platform runs them: batchinfer's own quarantine is only the
    model's environment there, and nothing takes the server's marker lines out."""
    return replace(
        settings, bad_records="fail", max_bad_records=None, environment=settings.job_environment
    )


def _instances(request: dict[str, Any]) -> tuple[str, int]:
    """The instance type and count a Create*Job request asks for."""
    resources = request.get("TransformResources") or request["ProcessingResources"]["ClusterConfig"]
    return resources["InstanceType"], resources["InstanceCount"]


def _split(arguments: list[str]) -> tuple[str, str | None]:
    """A split job's container: the ``batchinfer split`` command run with the job's
    arguments, in this process (its S3 client is moto's); Failed with an AlgorithmError
    when the command fails, as SageMaker reports a non-zero exit."""
    command = typer.main.get_command(cli.app)
    try:
        command.main(["split", *arguments], prog_name="batchinfer", standalone_mode=False)
    except (BatchInferError, click.ClickException) as exc:
        return "Failed", f"AlgorithmError: {exc}"[:1024]
    return "Completed", None


def _ending(missing: list[str], errors: list[str], kind: str) -> tuple[str, str | None]:
    """How a job that left ``missing`` inputs without output ends: ``kind`` (ClientError,
    AlgorithmError) when records failed, as SageMaker reports a data problem; an
    InternalServerError when inputs were lost with no record at fault (a lost instance)."""
    if not missing:
        return "Completed", None
    if errors:
        return "Failed", f"{kind}: no output for {', '.join(missing)}: {'; '.join(errors)}"[:1024]
    return "Failed", (
        "InternalServerError: We encountered an internal error. Please try again. "
        f"(no output for {', '.join(missing)}: the instance was lost)"
    )[:1024]


def _job_arn(kind: str, name: str) -> str:
    return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:{kind.lower()}-job/{name.lower()}"


class _NoResponse(Exception):
    """No response came back from SageMaker (the SDK's SdkClientException)."""


def _millis() -> int:
    return int(time.time() * 1000)


def _client_error(code: str, message: str, operation: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": 400, "RequestId": "offline"},
        },
        operation,
    )


class SageMakerTask(StateTaskServiceCallback):
    """The ``sagemaker`` service integration: Create*Job ``.sync`` (spec S1-S3)."""

    def __init__(self, jobs: SageMakerJobs) -> None:
        self.jobs = jobs
        super().__init__(
            supported_integration_patterns={
                ResourceCondition.Sync,
                ResourceCondition.WaitForTaskToken,
            }
        )

    def _operation(self) -> str:
        action = self.resource.api_action
        return action[0].upper() + action[1:]

    def _get_supported_parameters(self) -> set[str] | None:
        if self._operation() not in ("CreateTransformJob", "CreateProcessingJob"):
            return None
        return self.jobs.input_members(self._operation())

    def _from_error(self, env: Any, ex: Exception) -> FailureEvent:
        """A rejected Create*Job as Step Functions reports it: the errors the SageMaker API
        models keep their SDK class name (SageMaker.ResourceLimitExceededException), every
        other one is SageMaker.AmazonSageMakerException; the Cause is the SDK's message. A
        call that got no response is SageMaker.SdkClientException."""
        if isinstance(ex, _NoResponse):
            return _failure(self, env, "SageMaker.SdkClientException", str(ex))
        if not isinstance(ex, ClientError):
            return super()._from_error(env=env, ex=ex)
        code = ex.response["Error"]["Code"]
        modeled = code in self.jobs.modeled_errors(self._operation())
        error = f"SageMaker.{code}Exception" if modeled else "SageMaker.AmazonSageMakerException"
        status = 500 if code in SERVER_ERRORS else 400
        cause = (
            f"{ex.response['Error']['Message']} (Service: AmazonSageMaker; Status Code: "
            f"{status}; Error Code: {code}; Request ID: offline; Proxy: null)"
        )
        return _failure(self, env, error, cause)

    def _eval_service_task(
        self, env: Any, resource_runtime_part: Any, normalised_parameters: dict, state_credentials
    ) -> None:
        described = self.jobs.create(self._operation(), normalised_parameters)
        kind = "Transform" if "TransformJobName" in described else "Processing"
        env.stack.append({f"{kind}JobArn": described[f"{kind}JobArn"], "_described": described})

    def _build_sync_resolver(
        self, env: Any, resource_runtime_part: Any, normalised_parameters: dict, state_credentials
    ) -> Callable[[], Any]:
        described = env.stack.pop()["_described"]
        status = described.get("TransformJobStatus") or described.get("ProcessingJobStatus")

        name = described.get("TransformJobName") or described.get("ProcessingJobName")

        def resolve() -> dict[str, Any] | None:
            if name in self.jobs.stop_while_waiting:
                self.jobs.stop_while_waiting.discard(name)
                self.jobs.stop_execution()
                return None  # moto stops waiting once the execution is no longer running
            if status == "Completed":
                return described
            error = StatesErrorNameType.StatesTaskFailed
            raise FailureEventException(
                FailureEvent(
                    env=env,
                    error_name=StatesErrorName(typ=error),
                    event_type=HistoryEventType.TaskFailed,
                    event_details=EventDetails(
                        taskFailedEventDetails=TaskFailedEventDetails(
                            resource=self._get_sfn_resource(),
                            resourceType=self._get_sfn_resource_type(),
                            error=error.to_name(),
                            # AWS cuts a Cause at 32,768 characters (TaskFailedEventDetails);
                            # moto keeps the whole Describe*Job response.
                            cause=json.dumps(described)[:CAUSE_LIMIT],
                        )
                    ),
                )
            )

        return resolve


class SageMakerSdkTask(StateTaskServiceAwsSdk):
    """The AWS SDK integration's SageMaker Describe*Job calls, answered for the jobs the
    ``sagemaker`` integration accepted (moto's SageMaker does not hold them). An error is
    ``SageMaker.<code>Exception``: the service and error names in PascalCase, with the
    Exception suffix, as https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html
    says (``SageMaker.ResourceNotFoundException`` for a name SageMaker never accepted)."""

    def __init__(self, jobs: SageMakerJobs) -> None:
        self.jobs = jobs
        super().__init__()

    def _from_error(self, env: Any, ex: Exception) -> FailureEvent:
        if not isinstance(ex, ClientError):
            return super()._from_error(env=env, ex=ex)
        error = ex.response["Error"]
        cause = f"{error['Message']} (Service: SageMaker, Status Code: 400, Request ID: offline)"
        return _failure(self, env, f"SageMaker.{error['Code']}Exception", cause)

    def _eval_service_task(
        self, env: Any, resource_runtime_part: Any, normalised_parameters: dict, state_credentials
    ) -> None:
        action = self.resource.api_action
        operation = action[0].upper() + action[1:]
        if self.resource.api_name != "sagemaker" or operation not in (
            "DescribeTransformJob",
            "DescribeProcessingJob",
        ):
            raise AssertionError(f"no offline AWS SDK integration for {self.resource.api_name}")
        name = normalised_parameters[operation.removeprefix("Describe") + "Name"]
        env.stack.append(self.jobs.describe(operation, name))


def _failure(task: Any, env: Any, error: str, cause: str) -> FailureEvent:
    """The TaskFailed event of ``task`` with ``error`` and ``cause``."""
    return FailureEvent(
        env=env,
        error_name=CustomErrorName(error),
        event_type=HistoryEventType.TaskFailed,
        event_details=EventDetails(
            taskFailedEventDetails=TaskFailedEventDetails(
                error=error,
                cause=cause,
                resource=task._get_sfn_resource(),
                resourceType=task._get_sfn_resource_type(),
            )
        ),
    )
