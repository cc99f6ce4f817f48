"""The template's stack in moto: its bucket, table, topic and bus made from the template's
own properties, its state machine definition taken from the template and run by moto's
interpreter with the real Lambda handlers and SageMaker jobs done by the local engine, and
the EventBridge rules of Step Functions status changes delivered to their targets."""

import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import moto
from moto.kms import models as kms_models
from moto.kms.models import kms_backends
from moto.stepfunctions.parser.asl.component.program.program import Program
from moto.stepfunctions.parser.asl.component.state.exec.state_task import (
    lambda_eval_utils,
    state_task_factory,
)

from batchinfer.pipeline.storage.clients import s3_client, services
from batchinfer.uris import parse_s3_uri
from tests.support.atomic_dynamodb import atomic_writes
from tests.support.offline.arrivals import (
    Batch,
    EventSourceMapping,
    create_queues,
    matches,
    object_created,
)
from tests.support.offline.endpoints import Endpoints
from tests.support.offline.lambdas import Lambdas
from tests.support.offline.moto_fixes import corrected
from tests.support.offline.quick_moto import quick_moto
from tests.support.offline.sagemaker import SageMakerJobs, SageMakerSdkTask, SageMakerTask
from tests.support.offline.template import ACCOUNT, REGION, Function, render
from tests.support.permissions.audit import Audit
from tests.support.permissions.needs import Keys
from tests.support.permissions.recorder import CallRecorder

# (environment, granted and used grants) of every offline stack that closed without error,
# for the unused-grant report (tests/support/permissions/report.py).
GRANT_USAGE: list[tuple[str, dict[str, set[str]]]] = []

MOTO_CONFIG = {"stepfunctions": {"execute_state_machine": True}}


@contextmanager
def _key_id_of(stack_name: str) -> Iterator[None]:
    """moto names the KMS key created inside this block after ``stack_name`` and the keys its
    region already holds, not at random: the definition names the key, so each test of an
    environment gets the same definition text, whose parse ``quick_moto`` keeps."""
    held = len(kms_backends[ACCOUNT][REGION].keys)
    key_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{stack_name}/{held}"))
    with mock.patch.object(kms_models, "generate_key_id", lambda multi_region=False: key_id):
        yield


@dataclass
class Execution:
    """An ended execution: DescribeExecution's status and output, the error and cause it
    failed with, and its history events."""

    arn: str
    status: str
    output: Any
    error: str | None
    cause: str | None
    history: list[dict[str, Any]]

    def states_entered(self) -> list[str]:
        """The names of the states the execution entered, in order."""
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
        """The template's resources of type ``kind``, by logical id."""
        return {k: v for k, v in self.resources.items() if v["Type"] == kind}

    def _only(self, kind: str) -> tuple[str, dict[str, Any]]:
        (item,) = self.of_type(kind).items()
        return item

    def __enter__(self) -> "OfflineStack":
        self._exit = ExitStack()
        # Every client made from here on reports its calls (the audit decides on them).
        self.recorder = CallRecorder()
        self._exit.enter_context(self.recorder.recording())
        try:
            self._create()
        except BaseException:
            self._exit.close()
            raise
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self._exit.close()
        if kind is None:
            denied = self.audit.denied()
            environment = self.template["Description"].split(":")[0].removeprefix("batchinfer ")
            GRANT_USAGE.append((environment, self.audit.grants(self.audited)))
            if denied:
                raise AssertionError(
                    f"{len(denied)} AWS calls the template's IAM refuses:\n"
                    + "\n".join(map(str, denied))
                )

    def _create(self) -> None:
        session = boto3.Session(region_name=REGION)
        self.s3 = session.client("s3")
        self.sqs = session.client("sqs")
        self.sfn = session.client("stepfunctions")
        # Physical names for everything, ARNs as AWS forms them where policies name them.
        for logical_id, resource in self.resources.items():
            physical = self.refs.setdefault(logical_id, f"{self.name}-{logical_id.lower()}")
            self.attributes[(logical_id, "Arn")] = resource_arn(resource, logical_id, physical)
        key_id, _ = self._only("AWS::KMS::Key")
        with _key_id_of(self.name):
            key = session.client("kms").create_key(Description=f"{self.name} data key")
        self.attributes[(key_id, "Arn")] = key["KeyMetadata"]["Arn"]
        self.refs[key_id] = key["KeyMetadata"]["KeyId"]
        bucket_id, bucket = next(
            (k, v) for k, v in self.of_type("AWS::S3::Bucket").items() if "Data" in k
        )
        self.bucket = self.refs[bucket_id]
        self._create_bucket(self.bucket, bucket["Properties"])
        self.queue_urls = create_queues(
            self.sqs, self.of_type("AWS::SQS::Queue"), self._render, self.refs
        )
        self.refs |= self.queue_urls
        machine_id, _ = self._only("AWS::StepFunctions::StateMachine")
        # The ARN moto gives the state machine created below (the functions' environment
        # and the policies name it).
        self.refs[machine_id] = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{self.name}-runs"
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
            arn = self.attributes[(logical_id, "Arn")]
            props = resource["Properties"]
            variables = props.get("Environment", {}).get("Variables", {})
            functions[logical_id] = Function(
                arn,
                props["Handler"],
                self._render(variables),
                self._render(props["Role"]),
                props.get("Timeout", 3),
            )
        machine_id, machine = self._only("AWS::StepFunctions::StateMachine")
        machine_role = self.machine_role = self._render(machine["Properties"]["RoleArn"])
        self.lambdas = Lambdas(
            functions,
            as_role=lambda arn: self.audit.as_role(arn),
            on_invoke=lambda arn: self.audit.record(
                machine_role, "lambda", "Invoke", {"FunctionName": arn}
            ),
        )
        model_name = self.attributes[(model_id, "ModelName")]
        self.jobs = SageMakerJobs(
            self.s3,
            {model_name: model_data_url},
            session.client("sagemaker"),
            {model_name: self._render(model["Properties"]["ExecutionRoleArn"])},
            as_role=lambda arn: self.audit.as_role(arn),
            on_api_call=lambda operation, params: self.audit.record(
                machine_role, "sagemaker", operation, params
            ),
            stop_execution=self._stop_running,
        )
        self.endpoints = Endpoints(session.client("sagemaker"))
        self.definition = json.loads(self._render(machine["Properties"]["DefinitionString"]))
        self._patch()
        self.state_machine_arn = self.sfn.create_state_machine(
            name=f"{self.name}-runs",
            definition=json.dumps(self.definition),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/{self.name}-runs",
        )["stateMachineArn"]
        assert self.refs[machine_id] == self.state_machine_arn
        self.outputs = {
            key: self._render(output["Value"]) for key, output in self.template["Outputs"].items()
        }
        pipeline = [f for f in functions.values() if "BATCHINFER_TABLE_NAME" in f.environment]
        job_prefix = pipeline[0].environment["BATCHINFER_JOB_PREFIX"]
        self.audit = Audit(
            self.template, self._render, self._keys(session), self.recorder, job_prefix
        )
        # The runtimes whose grants the unused-grant report reviews: the pipeline's (the
        # step Lambdas and the S3 trigger's).
        pipeline_roles = [
            f.role
            for f in functions.values()
            if any(name.startswith("BATCHINFER_") for name in f.environment)
        ]
        self.mappings = [
            self._mapping(props["Properties"], functions)
            for props in self.of_type("AWS::Lambda::EventSourceMapping").values()
        ]
        model_role = self._render(model["Properties"]["ExecutionRoleArn"])
        self.audited = {
            self.audit.runtime_of(arn) for arn in [*pipeline_roles, model_role, machine_role]
        } | ({self.audit.cli_policy} if self.audit.cli_policy else set())

    def _mapping(self, props: dict[str, Any], functions: dict[str, Function]) -> EventSourceMapping:
        (queue_id,) = [k for k in self.queue_urls if props["EventSourceArn"]["Fn::GetAtt"][0] == k]
        function = functions[props["FunctionName"]["Ref"]]
        return EventSourceMapping(
            self.sqs,
            props,
            self.queue_urls[queue_id],
            self.attributes[(queue_id, "Arn")],
            function.arn,
            function.role,
            self.lambdas,
            as_role=lambda arn: self.audit.as_role(arn),
        )

    def _keys(self, session: Any) -> Keys:
        """Which key encrypts each bucket (as moto holds it), table and topic (as the
        template says)."""
        s3, kms = session.client("s3"), session.client("kms")
        tables = {
            self.refs[k]: self._render(
                v["Properties"].get("SSESpecification", {}).get("KMSMasterKeyId")
            )
            for k, v in self.of_type("AWS::DynamoDB::Table").items()
        }
        topics = {
            self.refs[k]: self._render(v["Properties"].get("KmsMasterKeyId"))
            for k, v in self.of_type("AWS::SNS::Topic").items()
        }

        def of_bucket(bucket: str) -> str | None:
            try:
                rules = s3.get_bucket_encryption(Bucket=bucket)[
                    "ServerSideEncryptionConfiguration"
                ]["Rules"]
            except s3.exceptions.ClientError:
                return None
            return as_arn(rules[0]["ApplyServerSideEncryptionByDefault"].get("KMSMasterKeyID"))

        def as_arn(key: str | None) -> str | None:
            """A key's ARN (one in another account, which moto does not hold, as given)."""
            if not key or key.startswith("arn:"):
                return key
            return kms.describe_key(KeyId=key)["KeyMetadata"]["Arn"]

        return Keys(
            of_bucket=of_bucket,
            of_table=lambda name: as_arn(tables.get(name)),
            of_topic=lambda arn: as_arn(topics.get(arn)),
        )

    def _create_bucket(self, name: str, properties: dict[str, Any]) -> None:
        """The data bucket as the template makes it: versioned, SSE-KMS with the stack's key
        (so copies pin object versions and reads go through the key, as in an account)."""
        self.s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
        self.s3.put_bucket_versioning(
            Bucket=name, VersioningConfiguration=properties["VersioningConfiguration"]
        )
        rules = self._render(properties["BucketEncryption"])["ServerSideEncryptionConfiguration"]
        self.s3.put_bucket_encryption(  # CloudFormation's names for the API's
            Bucket=name,
            ServerSideEncryptionConfiguration={
                "Rules": [
                    {
                        "ApplyServerSideEncryptionByDefault": rule["ServerSideEncryptionByDefault"],
                        "BucketKeyEnabled": rule.get("BucketKeyEnabled", False),
                    }
                    for rule in rules
                ]
            },
        )

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

        def service_for(service_name: str) -> Any:
            if service_name == "sagemaker":
                return SageMakerTask(self.jobs)
            if service_name == "aws-sdk":  # the definition's only SDK calls are SageMaker's
                return SageMakerSdkTask(self.jobs)
            return original(service_name)

        self._exit.enter_context(
            mock.patch.object(state_task_factory, "state_task_service_for", service_for)
        )
        self._exit.enter_context(
            mock.patch.object(lambda_eval_utils, "_invoke_lambda_function", self.lambdas.invoke)
        )
        original_eval = Program.eval

        def run_as_machine(program: Program, env: Any) -> None:
            # What the interpreter calls itself (the Map's item reader and result writer)
            # the state machine's role calls.
            with self.audit.as_role(self.machine_role):
                original_eval(program, env)

        self._exit.enter_context(mock.patch.object(Program, "eval", run_as_machine))
        self._exit.enter_context(quick_moto())  # first: the corrections wrap its parse
        self._exit.enter_context(corrected())
        # Executions run in threads: their conditional writes must be atomic, as in DynamoDB.
        self._exit.enter_context(atomic_writes())
        self._exit.enter_context(self.endpoints.intercepting())
        self._exit.enter_context(mock.patch.dict(os.environ, self.lambdas.environment()))
        # Clients made before (by another test, outside this stack's recorder) would go
        # unrecorded: each stack starts the Lambdas' clients afresh, as a new container.
        for made_once in (services, s3_client):
            made_once.cache_clear()
            self._exit.callback(made_once.cache_clear)

    # --- using it ---

    def put(self, key: str, data: bytes) -> str:
        """Write ``data`` at ``key`` of the stack's bucket; its S3 URI. The "Object Created"
        event goes to the SQS queues of the template's S3 rules that match it, as EventBridge
        delivers it (the stack turns on EventBridge notifications for the bucket)."""
        etag = self.s3.put_object(Bucket=self.bucket, Key=key, Body=data)["ETag"]
        event = object_created(self.bucket, key, len(data), etag)
        for rule in self.of_type("AWS::Events::Rule").values():
            props = self._render(rule["Properties"])
            if props["EventPattern"].get("source") != ["aws.s3"]:
                continue
            if matches(props["EventPattern"], event):
                for target in props["Targets"]:
                    queue = target["Arn"].rsplit(":", 1)[-1]
                    self.sqs.send_message(
                        QueueUrl=self.sqs.get_queue_url(QueueName=queue)["QueueUrl"],
                        MessageBody=json.dumps(event),
                    )
        return f"s3://{self.bucket}/{key}"

    def redeliver(self, batch: Batch) -> Batch:
        """``batch`` given to the S3 trigger's Lambda again, as SQS redelivers messages whose
        delete did not happen."""
        (mapping,) = self.mappings
        return mapping.invoke(batch.event["Records"])

    def executions(self) -> list[str]:
        """The ARNs of the state machine's executions, running or ended."""
        paginator = self.sfn.get_paginator("list_executions")
        return [
            e["executionArn"]
            for page in paginator.paginate(stateMachineArn=self.state_machine_arn)
            for e in page["executions"]
        ]

    def poll_arrivals(self) -> Batch | None:
        """One batch of the S3 trigger's queue through its Lambda, as the event source
        mapping delivers it (:class:`EventSourceMapping`); None when the queue is empty."""
        (mapping,) = self.mappings
        return mapping.poll()

    def get(self, uri: str) -> bytes:
        """The object at ``uri``."""
        location = parse_s3_uri(uri)
        return self.s3.get_object(Bucket=location.bucket, Key=location.key)["Body"].read()

    def keys(self, prefix: str) -> list[str]:
        """The keys of the stack's bucket under ``prefix``, sorted."""
        paginator = self.s3.get_paginator("list_objects_v2")
        return sorted(
            item["Key"]
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix)
            for item in page.get("Contents", [])
        )

    def bytes_read_by_lambdas(self) -> dict[str, int]:
        """The bytes the GetObject calls of each Lambda step returned, by handler module."""
        read = self.recorder.bytes_read
        return {
            function.handler.rsplit(".", 1)[0]: read.get(self.audit.runtime_of(function.role), 0)
            for function in self.lambdas.functions.values()
        }

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
        with self.audit.as_role(None):
            self._stop_all()

    def _stop_all(self) -> None:
        for item in self.sfn.list_executions(
            stateMachineArn=self.state_machine_arn, statusFilter="RUNNING"
        )["executions"]:
            self.sfn.stop_execution(
                executionArn=item["executionArn"], error="Stopped", cause="by hand"
            )

    def start(self, request: Any, name: str) -> str:
        """Start an execution named ``name`` with ``request`` as input; its ARN."""
        return self.sfn.start_execution(
            stateMachineArn=self.state_machine_arn, name=name, input=json.dumps(request)
        )["executionArn"]

    def wait(self, arn: str, timeout: float = 180.0) -> Execution:
        """The execution ``arn`` once it has ended, as EventBridge then announces it."""
        described = ended(self.sfn, arn, timeout)
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
                arn = self._render(target["Arn"])
                self.lambdas.invoke_event(arn, event, **self._async_invocation(arn))

    def _async_invocation(self, arn: str) -> dict[str, Any]:
        """How Lambda takes an asynchronous invocation of the function ``arn``: its retries
        (2 unless configured) and, where configured, its on-failure SQS destination."""
        function_id = arn.split(":function:")[-1]  # the harness's functions are named so
        config: dict[str, Any] = next(
            (
                self._render(c["Properties"])
                for c in self.of_type("AWS::Lambda::EventInvokeConfig").values()
                if c["Properties"]["FunctionName"] == {"Ref": function_id}
            ),
            {},
        )
        queue = config.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        if queue is None:
            return {"retries": config.get("MaximumRetryAttempts", 2)}

        url = self.sqs.get_queue_url(QueueName=queue.rsplit(":", 1)[-1])["QueueUrl"]

        def send(record: dict[str, Any]) -> None:
            self.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(record))

        return {"retries": config.get("MaximumRetryAttempts", 2), "on_failure": send}

    def run(self, request: Any, name: str) -> Execution:
        """Start an execution and wait for its end."""
        return self.wait(self.start(request, name))


def ended(sfn: Any, arn: str, timeout: float) -> dict[str, Any]:
    """DescribeExecution of ``arn`` once the execution is no longer running."""
    deadline = time.monotonic() + timeout
    while (described := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        if time.monotonic() > deadline:
            raise AssertionError(f"execution {arn} still running after {timeout} s")
        time.sleep(0.1)
    return described


def resource_arn(resource: dict[str, Any], logical_id: str, physical: str) -> str:
    """The ARN AWS gives a resource of this kind (a made-up one where no policy names it)."""
    kind = resource["Type"]
    formats = {
        "AWS::IAM::Role": f"arn:aws:iam::{ACCOUNT}:role/{physical}",
        "AWS::IAM::ManagedPolicy": f"arn:aws:iam::{ACCOUNT}:policy/{physical}",
        "AWS::KMS::Key": f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{physical}",
        "AWS::S3::Bucket": f"arn:aws:s3:::{physical}",
        "AWS::DynamoDB::Table": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{physical}",
        "AWS::Events::EventBus": f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/"
        + resource.get("Properties", {}).get("Name", physical),
        "AWS::Logs::LogGroup": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{physical}:*",
        "AWS::Lambda::Function": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{logical_id}",
        "AWS::SQS::Queue": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{physical}",
    }
    service = kind.split("::")[1].lower()
    return formats.get(kind, f"arn:aws:{service}:{REGION}:{ACCOUNT}:{logical_id}")


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
