"""Run the synthesized state machine offline, end to end.

``OfflineStack(template, ...)`` (a context manager, inside ``mock_aws``) takes the state
machine definition from the synthesized CloudFormation template (no hand-written copy),
creates the stack's bucket, status table, topic and event bus in moto from the template's
own properties, and runs executions with moto's Amazon States Language interpreter
(``mock_aws(config={"stepfunctions": {"execute_state_machine": True}})``).

moto's interpreter does not run Lambda code without Docker and has no SageMaker service
integration, so two functions of its parser are replaced while the stack is open (each is
the single place where moto turns a Task state of its kind into a call):

- ``lambda_eval_utils._invoke_lambda_function``: every Lambda Task (``Resource`` = a
  function ARN, or ``lambda:invoke``) calls the real handler of ``lambda/`` named by the
  function's ``Handler`` in the template, with the function's environment variables, and
  answers as Lambda does: the JSON result, or ``FunctionError`` with ``errorType`` /
  ``errorMessage`` for an exception.
- ``state_task_factory.state_task_service_for``: the ``sagemaker`` service becomes
  :class:`SageMakerTask`, which supports ``createTransformJob.sync`` and
  ``createProcessingJob.sync``. :class:`SageMakerJobs` checks the request against
  botocore's SageMaker model and R1 (name pattern, a name never reused), runs the job with
  the local engine over moto S3 (download the ManifestFile's inputs, run real model servers
  or the processing entrypoint, upload the ``.out`` objects), and returns the Describe*Job
  response (spec S2). A Failed job fails the task with ``States.TaskFailed`` and the
  Describe*Job response as Cause; :data:`SageMakerJobs.faults` injects ``SageMaker.*`` API
  errors (S3) and failed inputs on demand.

Two more replacements correct divergences of moto's interpreter from AWS that this
definition meets: moto returns a one-element list for a definite path below an index
(``$[0].name``, as the ``RunJob`` ResultSelector reads a Parallel's output) where AWS
returns the value itself (``aws_extract_json``); and moto's lexer reads ``"RoleArn.$"`` as
the keyword of Task ``Credentials``, so in Parameters (CreateProcessingJob's RoleArn) it
binds the path text instead of its value (``bind_keyword_paths``); and a Parallel whose
branch fails with a ``States.*`` error (a Failed job's ``States.TaskFailed``) crashes in
moto instead of failing with that error (``parallel_error_name``).

Relies on moto 5.2.5 (pinned in requirements-dev.txt): both replaced functions are
internals of its parser.
"""

import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import boto3
import botocore.session
import moto
from botocore.exceptions import ClientError, ParamValidationError
from botocore.validate import validate_parameters
from jsonpath_ng.ext import parse as parse_json_path
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
from moto.stepfunctions.parser.asl.component.common.payload.payloadvalue.payloadbinding.payload_binding import (  # noqa: E501
    PayloadBindingStringExpressionSimple,
)
from moto.stepfunctions.parser.asl.component.common.payload.payloadvalue.payloadvaluelit.payload_value_str import (  # noqa: E501
    PayloadValueStr,
)
from moto.stepfunctions.parser.asl.component.common.string import string_expression
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl
from moto.stepfunctions.parser.asl.component.state.exec.state_task import (
    lambda_eval_utils,
    state_task_factory,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import (
    ResourceCondition,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (  # noqa: E501
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

from batchinfer.engine.inputs import InputFile
from batchinfer.engine.processing_engine import run_processing
from batchinfer.engine.transform_engine import run_transform
from batchinfer.errors import BatchInferError
from batchinfer.model_artifact import prepare_model_dir
from batchinfer.pipeline.clients import services
from batchinfer.transform.assemble import output_name
from batchinfer.transform.job_api import from_api
from batchinfer.transform.settings import TransformSettings, validate_job_name
from batchinfer.uris import S3Location, parse_s3_uri
from tests.support.lambdas import load_handler

MOTO_VERSION = "5.2.5"
if moto.__version__ != MOTO_VERSION:
    raise ImportError(
        f"tests/e2e/harness.py patches internals of moto {MOTO_VERSION}'s Step Functions "
        f"parser; moto {moto.__version__} is installed (see requirements-dev.txt)"
    )

ACCOUNT = "123456789012"
REGION = "eu-west-1"
MOTO_CONFIG = {"stepfunctions": {"execute_state_machine": True}}
# API error codes SageMaker answers with a 5xx status.
SERVER_ERRORS = ("InternalFailure", "ServiceUnavailable")


# --- the template ------------------------------------------------------------------------


def render(value: Any, refs: dict[str, str], attributes: dict[tuple[str, str], str]) -> Any:
    """``value`` with ``Ref``, ``Fn::GetAtt``, ``Fn::Join`` and ``Fn::Sub`` resolved."""
    if isinstance(value, list):
        return [render(v, refs, attributes) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return refs[argument]
        if function == "Fn::GetAtt":
            return attributes[tuple(argument)]
        if function == "Fn::Join":
            return argument[0].join(render(part, refs, attributes) for part in argument[1])
        if function == "Fn::Sub":
            text = argument
            for name, physical in refs.items():
                text = text.replace("${" + name + "}", physical)
            return text
    return {k: render(v, refs, attributes) for k, v in value.items()}


@dataclass(frozen=True)
class Function:
    """A Lambda function of the template: its handler module and environment."""

    arn: str
    handler: str
    environment: dict[str, str]


# --- moto divergences from AWS -------------------------------------------------------------

# A path that can select more than one node: a wildcard, deep scan, filter, slice or union.
_INDEFINITE_PATH = re.compile(r"\*|\.\.|\?\(|\[[^\]]*[:,][^\]]*\]")


def aws_extract_json(path: str, data: Any) -> Any:
    """moto's ``extract_json``, except that a definite path yields its one node's value."""
    if not _INDEFINITE_PATH.search(path):
        matches = parse_json_path(path).find(data)
        if len(matches) == 1:
            return matches[0].value
    return _moto_extract_json(path, data)


_moto_extract_json = string_expression.extract_json
_moto_payload_binding_value = Preprocessor.visitPayload_binding_value


def parallel_error_name(error_name: str) -> Any:
    """The error a Parallel fails with: its branch's, ``States.*`` names included."""
    if error_name.startswith("States."):
        return StatesErrorName.from_name(error_name)
    return CustomErrorName(error_name=error_name)


def bind_keyword_paths(self: Preprocessor, ctx: Any) -> Any:
    """A ``"<key>.$": "$..."`` binding whose key moto lexes as a keyword is a path too."""
    binding = _moto_payload_binding_value(self, ctx)
    value = binding.payload_value
    if binding.field.endswith(".$") and isinstance(value, PayloadValueStr):
        return PayloadBindingStringExpressionSimple(
            field=binding.field[:-2],
            string_expression_simple=string_expression.StringJsonPath(value.val),
        )
    return binding


# --- Lambda ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LambdaFault:
    """The next invocation of ``step`` (its handler module) fails with ``error`` as the
    Lambda service reports it: ``before`` the handler runs, or ``after`` it ran (its answer
    lost, as with a Lambda.ServiceException on the way back), or answers ``answer``
    instead of the handler's result (``when="answer"``)."""

    step: str
    when: str = "after"
    error: str = "Lambda.ServiceException"
    answer: Any = None


class Lambdas:
    """The template's functions, run in-process by their real handlers."""

    def __init__(self, functions: dict[str, Function]) -> None:
        self.functions = functions
        self.modules: dict[str, ModuleType] = {}
        self.invocations: list[tuple[str, Any]] = []  # (handler module, event)
        self.faults: list[LambdaFault] = []
        self._lock = threading.Lock()

    def handler_of(self, arn: str) -> str:
        """The handler module of the function ``arn`` (or name) names."""
        return self.functions[arn.split(":function:")[-1]].handler.rsplit(".", 1)[0]

    def environment(self) -> dict[str, str]:
        """The variables of every function (they must agree: one process runs them all)."""
        merged: dict[str, str] = {}
        for function in self.functions.values():
            for key, value in function.environment.items():
                if merged.setdefault(key, value) != value:
                    raise AssertionError(f"functions disagree on the environment variable {key}")
        return merged

    def invoke(self, parameters: dict, region: str, state_credentials: Any) -> dict:
        """What ``lambda_client.invoke(**parameters)`` answers, as moto's parser reads it."""
        function = self.functions[parameters["FunctionName"].split(":function:")[-1]]
        module_name, attribute = function.handler.rsplit(".", 1)
        event = json.loads(parameters.get("Payload") or b"{}")
        with self._lock:
            self.invocations.append((module_name, event))
            if module_name not in self.modules:
                self.modules[module_name] = load_handler(module_name)
            fault = next((f for f in self.faults if f.step == module_name), None)
            if fault is not None:
                self.faults.remove(fault)
        handler: Callable[[Any, Any], Any] = getattr(self.modules[module_name], attribute)
        if fault is not None and fault.when == "before":
            return _service_error(fault.error)
        try:
            result = handler(event, None)
        except Exception as exc:  # Lambda reports every exception of a handler this way
            payload = {"errorMessage": str(exc), "errorType": type(exc).__name__}
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": payload}
        if fault is not None:
            if fault.when == "answer":
                return {"StatusCode": 200, "Payload": fault.answer}
            return _service_error(fault.error)
        # Lambda serialises the result: anything json cannot encode is an error there too.
        return {"StatusCode": 200, "Payload": json.loads(json.dumps(result))}

    def invoke_event(self, arn: str, event: dict[str, Any]) -> Any:
        """An asynchronous invocation (an EventBridge target): the handler's result."""
        response = self.invoke({"FunctionName": arn, "Payload": json.dumps(event)}, REGION, None)
        if response.get("FunctionError"):
            raise AssertionError(f"{arn} failed on {event['detail-type']}: {response['Payload']}")
        return response["Payload"]

    def events_of(self, module_name: str) -> list[Any]:
        return [event for name, event in self.invocations if name == module_name]


def _service_error(error: str) -> dict[str, Any]:
    """An invocation the Lambda service failed: the task fails with ``error``."""
    payload = {"errorType": error, "errorMessage": "injected by the offline harness"}
    return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": payload}


# --- SageMaker ---------------------------------------------------------------------------


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
class StopJob:
    """The next job is stopped from outside the pipeline (StopTransformJob by a person):
    it ends Stopped with no output."""


@dataclass(frozen=True)
class StopExecution:
    """The execution is stopped while the next job runs: Step Functions then stops the job
    (best effort, spec S6), which ends Stopped with no output."""


@dataclass
class SageMakerJobs:
    """Transform and processing jobs done by the local engine over moto S3."""

    s3: Any
    models: dict[str, str]  # model name -> ModelDataUrl
    region: str = REGION
    faults: list[ApiError | FailInputs | StopJob | StopExecution] = field(default_factory=list)
    stop_execution: Callable[[], None] = lambda: None  # set by OfflineStack
    # Jobs whose execution is stopped while its .sync task waits for them.
    stop_while_waiting: set[str] = field(default_factory=set)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    described: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._model = botocore.session.get_session().get_service_model("sagemaker")
        self._lock = threading.Lock()

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
        with self._lock:
            self.requests.append((operation, request))
            fault = self.faults.pop(0) if self.faults else None
            name = request.get(f"{kind}JobName", "")
            self._validate(operation, request, name)
            if isinstance(fault, ApiError):
                raise _client_error(fault.code, fault.message, operation)
            self.described[name] = {}  # the name is taken, whatever happens next
        started = _millis()
        fail = fault.count if isinstance(fault, FailInputs) else 0
        if isinstance(fault, StopExecution):
            self.stop_while_waiting.add(name)
        if isinstance(fault, StopJob | StopExecution):
            status, reason = "Stopped", None
        elif kind == "Transform":
            status, reason = self._transform(request, fail)
        else:
            status, reason = self._processing(request, fail)
        described = {
            **request,
            f"{kind}JobArn": f"arn:aws:sagemaker:{self.region}:{ACCOUNT}:"
            f"{kind.lower()}-job/{name.lower()}",
            f"{kind}JobStatus": status,
            "CreationTime": started,
            f"{kind}StartTime" if kind == "Transform" else "ProcessingStartTime": started,
            f"{kind}EndTime" if kind == "Transform" else "ProcessingEndTime": _millis(),
        }
        if reason:
            described["FailureReason"] = reason
            if kind == "Processing":
                described["ExitMessage"] = reason[:1024]
        self.described[name] = described
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

    def _upload(self, files: list[InputFile], out_dir: Path, output: str, lost: int) -> list[str]:
        """Upload each input's ``.out`` (R12); the first ``lost`` inputs lose theirs."""
        target = parse_s3_uri(output)
        missing = []
        for number, file in enumerate(files):
            local = out_dir / output_name(file.name)
            if number < lost or not local.is_file():
                missing.append(file.name)
                continue
            key = S3Location(target.bucket, target.key.rstrip("/") + "/" + output_name(file.name))
            self.s3.upload_file(str(local), key.bucket, key.key)
        return missing

    def _transform(self, request: dict[str, Any], lost: int) -> tuple[str, str | None]:
        model_data_url = self.models.get(request["ModelName"])
        if model_data_url is None:
            return "Failed", f"ClientError: Could not find model {request['ModelName']}"
        settings = from_api(request)
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
            missing = self._upload(
                files, work / "output", request["TransformOutput"]["S3OutputPath"], lost
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
            )
            output = request["ProcessingOutputConfig"]["Outputs"][0]["S3Output"]["S3Uri"]
            missing = self._upload(files, work / "output", output, lost)
        errors = [o.error for o in report.outcomes if o.error]
        return _ending(missing, errors, "AlgorithmError")


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

    jobs: SageMakerJobs  # set on the class by OfflineStack

    def __init__(self) -> None:
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
        other one is SageMaker.AmazonSageMakerException; the Cause is the SDK's message."""
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
        return FailureEvent(
            env=env,
            error_name=CustomErrorName(error),
            event_type=HistoryEventType.TaskFailed,
            event_details=EventDetails(
                taskFailedEventDetails=TaskFailedEventDetails(
                    error=error,
                    cause=cause,
                    resource=self._get_sfn_resource(),
                    resourceType=self._get_sfn_resource_type(),
                )
            ),
        )

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
                            cause=json.dumps(described),
                        )
                    ),
                )
            )

        return resolve


# --- the stack ---------------------------------------------------------------------------


@dataclass
class Execution:
    arn: str
    status: str
    output: Any
    error: str | None
    cause: str | None
    history: list[dict[str, Any]]

    def states_entered(self) -> list[str]:
        return [
            e["stateEnteredEventDetails"]["name"]
            for e in self.history
            if "stateEnteredEventDetails" in e
        ]

    def largest_state(self) -> int:
        """The largest state the execution carried into or out of a state, in bytes (Step
        Functions fails an execution whose state passes 256 KiB)."""
        sizes = [
            len(details[key].encode())
            for event in self.history
            for name in ("stateEnteredEventDetails", "stateExitedEventDetails")
            if (details := event.get(name))
            for key in ("input", "output")
            if key in details
        ]
        return max(sizes, default=0)


class OfflineStack:
    """The template's stack in moto, with its state machine runnable end to end."""

    def __init__(self, template: dict[str, Any], *, name: str = "batchinfer-e2e") -> None:
        self.template = template
        self.name = name
        self.resources: dict[str, dict[str, Any]] = template["Resources"]
        self.refs: dict[str, str] = {
            "AWS::Partition": "aws",
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": name,
        }
        self.attributes: dict[tuple[str, str], str] = {}
        self.outputs: dict[str, str] = {}
        self.queues: dict[str, str] = {}

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == kind}

    def _only(self, kind: str) -> tuple[str, dict[str, Any]]:
        (item,) = self.of_type(kind).items()
        return item

    def __enter__(self) -> "OfflineStack":
        self._exit = ExitStack()
        try:
            self._create()
        except BaseException:
            self._exit.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._exit.close()

    def _create(self) -> None:
        session = boto3.Session(region_name=REGION)
        self.s3 = session.client("s3")
        self.sqs = session.client("sqs")
        self.sfn = session.client("stepfunctions")
        # Physical names for everything, fake ARNs where nothing real is needed.
        for logical_id, resource in self.resources.items():
            self.refs.setdefault(logical_id, f"{self.name}-{logical_id.lower()}")
            self.attributes[(logical_id, "Arn")] = (
                f"arn:aws:{_service(resource['Type'])}:{REGION}:{ACCOUNT}:{logical_id}"
            )
        bucket_id, _ = next(
            (k, v) for k, v in self.of_type("AWS::S3::Bucket").items() if "Data" in k
        )
        self.bucket = self.refs[bucket_id]
        self.s3.create_bucket(
            Bucket=self.bucket, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        table_id, table = self._only("AWS::DynamoDB::Table")
        props = table["Properties"]
        session.client("dynamodb").create_table(
            TableName=self.refs[table_id],
            KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"],
            GlobalSecondaryIndexes=props["GlobalSecondaryIndexes"],
            BillingMode=props["BillingMode"],
        )
        self.table_name = self.refs[table_id]
        topic_id, _ = self._only("AWS::SNS::Topic")
        sns = session.client("sns")
        self.refs[topic_id] = sns.create_topic(Name=f"{self.name}-runs")["TopicArn"]
        self.topic_arn = self.refs[topic_id]
        bus_id, bus = self._only("AWS::Events::EventBus")
        events = session.client("events")
        self.refs[bus_id] = bus["Properties"]["Name"]
        events.create_event_bus(Name=self.refs[bus_id])
        self._observe(sns, events)
        model_id, model = self._only("AWS::SageMaker::Model")
        self.attributes[(model_id, "ModelName")] = f"{self.name}-model"
        model_data_url = model["Properties"]["PrimaryContainer"]["ModelDataUrl"]
        self.model_data_url = model_data_url
        functions = {}
        for logical_id, resource in self.of_type("AWS::Lambda::Function").items():
            arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{logical_id}"
            self.attributes[(logical_id, "Arn")] = arn
            props = resource["Properties"]
            variables = props.get("Environment", {}).get("Variables", {})
            functions[logical_id] = Function(arn, props["Handler"], self._render(variables))
        self.lambdas = Lambdas(functions)
        self.jobs = SageMakerJobs(
            self.s3,
            {self.attributes[(model_id, "ModelName")]: model_data_url},
            stop_execution=self._stop_running,
        )
        machine_id, machine = self._only("AWS::StepFunctions::StateMachine")
        self.definition = json.loads(self._render(machine["Properties"]["DefinitionString"]))
        self._patch()
        self.state_machine_arn = self.sfn.create_state_machine(
            name=f"{self.name}-runs",
            definition=json.dumps(self.definition),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/{self.name}-runs",
        )["stateMachineArn"]
        self.refs[machine_id] = self.state_machine_arn
        self.outputs = {
            key: self._render(output["Value"]) for key, output in self.template["Outputs"].items()
        }

    def _render(self, value: Any) -> Any:
        return render(value, self.refs, self.attributes)

    def _observe(self, sns: Any, events: Any) -> None:
        """SQS queues that receive the topic's messages and the bus's events."""
        for name in ("topic", "bus"):
            self.queues[name] = self.sqs.create_queue(QueueName=f"{self.name}-{name}")["QueueUrl"]
        sns.subscribe(TopicArn=self.topic_arn, Protocol="sqs", Endpoint=self._queue_arn("topic"))
        bus = self.refs[self._only("AWS::Events::EventBus")[0]]
        events.put_rule(
            Name="observe", EventBusName=bus, EventPattern=json.dumps({"source": [{"prefix": ""}]})
        )
        events.put_targets(
            Rule="observe", EventBusName=bus, Targets=[{"Id": "q", "Arn": self._queue_arn("bus")}]
        )

    def _queue_arn(self, name: str) -> str:
        return self.sqs.get_queue_attributes(
            QueueUrl=self.queues[name], AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]

    def _patch(self) -> None:
        original = state_task_factory.state_task_service_for
        jobs = self.jobs

        class Task(SageMakerTask):
            pass

        Task.jobs = jobs

        def service_for(service_name: str) -> Any:
            return Task() if service_name == "sagemaker" else original(service_name)

        self._exit.enter_context(
            mock.patch.object(state_task_factory, "state_task_service_for", service_for)
        )
        self._exit.enter_context(
            mock.patch.object(lambda_eval_utils, "_invoke_lambda_function", self.lambdas.invoke)
        )
        self._exit.enter_context(
            mock.patch.object(string_expression, "extract_json", aws_extract_json)
        )
        self._exit.enter_context(
            mock.patch.object(Preprocessor, "visitPayload_binding_value", bind_keyword_paths)
        )
        self._exit.enter_context(
            mock.patch.object(branches_decl, "CustomErrorName", parallel_error_name)
        )
        self._exit.enter_context(mock.patch.dict(os.environ, self.lambdas.environment()))
        services.cache_clear()
        self._exit.callback(services.cache_clear)

    # --- using it ---

    def put(self, key: str, data: bytes) -> str:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=data)
        return f"s3://{self.bucket}/{key}"

    def get(self, uri: str) -> bytes:
        location = parse_s3_uri(uri)
        return self.s3.get_object(Bucket=location.bucket, Key=location.key)["Body"].read()

    def keys(self, prefix: str) -> list[str]:
        paginator = self.s3.get_paginator("list_objects_v2")
        return sorted(
            item["Key"]
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix)
            for item in page.get("Contents", [])
        )

    def announced(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(SNS notifications, bus events) delivered since the last call."""
        found = []
        for name in ("topic", "bus"):
            messages = []
            while True:
                got = self.sqs.receive_message(
                    QueueUrl=self.queues[name], MaxNumberOfMessages=10
                ).get("Messages", [])
                if not got:
                    break
                for message in got:
                    messages.append(json.loads(message["Body"]))
                    self.sqs.delete_message(
                        QueueUrl=self.queues[name], ReceiptHandle=message["ReceiptHandle"]
                    )
            found.append(messages)
        return found[0], found[1]

    def _stop_running(self) -> None:
        """StopExecution on every running execution (a person stopping a run)."""
        for item in self.sfn.list_executions(
            stateMachineArn=self.state_machine_arn, statusFilter="RUNNING"
        )["executions"]:
            self.sfn.stop_execution(
                executionArn=item["executionArn"], error="Stopped", cause="by hand"
            )

    def start(self, request: Any, name: str) -> str:
        return self.sfn.start_execution(
            stateMachineArn=self.state_machine_arn, name=name, input=json.dumps(request)
        )["executionArn"]

    def wait(self, arn: str, timeout: float = 180.0) -> Execution:
        deadline = time.monotonic() + timeout
        while True:
            described = self.sfn.describe_execution(executionArn=arn)
            if described["status"] != "RUNNING":
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"execution {arn} still running after {timeout} s")
            time.sleep(0.1)
        history = self.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        failed = next(
            (
                e["executionFailedEventDetails"]
                for e in history
                if "executionFailedEventDetails" in e
            ),
            {},
        )
        execution = Execution(
            arn=arn,
            status=described["status"],
            output=json.loads(described["output"]) if described.get("output") else None,
            error=failed.get("error"),
            cause=failed.get("cause"),
            history=history,
        )
        self._announce_status_change(described, execution)
        return execution

    def _announce_status_change(self, described: dict[str, Any], execution: Execution) -> None:
        """EventBridge's part: the "Step Functions Execution Status Change" event of an
        ended execution goes to the targets of every rule of the template whose pattern
        matches it (the end-of-run rule's target is the failure recorder)."""
        detail = {
            "executionArn": execution.arn,
            "stateMachineArn": self.state_machine_arn,
            "name": described["name"],
            "status": execution.status,
            "input": described.get("input"),
            "output": described.get("output"),
            "error": execution.error,
            "cause": execution.cause,
        }
        event = {
            "source": "aws.states",
            "detail-type": "Step Functions Execution Status Change",
            "detail": detail,
        }
        for rule in self.of_type("AWS::Events::Rule").values():
            props = rule["Properties"]
            pattern = self._render(props.get("EventPattern") or {})
            if pattern.get("source") != ["aws.states"]:
                continue
            if execution.status not in pattern["detail"]["status"]:
                continue
            for target in props["Targets"]:
                self.lambdas.invoke_event(self._render(target["Arn"]), event)

    def run(self, request: Any, name: str) -> Execution:
        """Start an execution and wait for its end."""
        return self.wait(self.start(request, name))


def _service(kind: str) -> str:
    return kind.split("::")[1].lower()


@contextmanager
def offline_stack(template: dict[str, Any], model_archive: Path) -> Iterator[OfflineStack]:
    """An :class:`OfflineStack` inside ``mock_aws``, with the model archive uploaded to the
    template's ModelDataUrl."""
    with moto.mock_aws(config=MOTO_CONFIG), OfflineStack(template) as stack:
        location = parse_s3_uri(stack.model_data_url)
        stack.s3.create_bucket(
            Bucket=location.bucket, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        stack.s3.upload_file(str(model_archive), location.bucket, location.key)
        yield stack


def model_archive(inference_py: str, directory: Path) -> Path:
    """A model.tar.gz holding ``code/inference.py`` (C2)."""
    source = directory / "model"
    (source / "code").mkdir(parents=True)
    (source / "code" / "inference.py").write_text(inference_py)
    archive = shutil.make_archive(str(directory / "model"), "gztar", source)
    return Path(archive)


__all__ = [
    "ApiError",
    "Execution",
    "FailInputs",
    "LambdaFault",
    "OfflineStack",
    "SageMakerJobs",
    "StopExecution",
    "StopJob",
    "model_archive",
    "offline_stack",
]
