"""The pipeline as one construct: every resource of one environment, in any stack."""

from collections.abc import Mapping
from pathlib import Path

from aws_cdk import CfnResource, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from batchinfer.pipeline.contract import stack_outputs
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.units import parse_size
from stacks.cli_access import CliAccess
from stacks.config import PipelineConfig, validate_config
from stacks.functions import Functions
from stacks.image_builds import GPU_AMI_VERSION
from stacks.log_groups import encrypted_log_group
from stacks.model import Model
from stacks.nag import acknowledge
from stacks.operations import Alarms, Notifications
from stacks.outputs import Outputs
from stacks.split_jobs import SplitJobs
from stacks.status_table import StatusTable
from stacks.storage import Storage
from stacks.triggers import Triggers
from stacks.workflow import Workflow

# The directory holding stacks/, lambda/, batchinfer/ and containers/: the Lambdas' code and
# the image are built from there, wherever the app runs from. A local model_data lies there.
SOURCE_ROOT = Path(__file__).resolve().parents[1]


class BatchInferencePipeline(Construct):
    """Every resource of one environment of the pipeline: storage, the status table, the
    model and its image, the Lambdas, the state machine, triggers, notifications, alarms,
    the CLI's policy, and the outputs (exported CfnOutputs of the enclosing stack and SSM
    parameters ``/batchinfer/<config.name>/<key>``), hence one per stack.

    ``config`` is validated as an environment of ``cdk.json`` is; its errors name
    ``environments.<config.name>.<key>``."""

    def __init__(self, scope: Construct, id: str, *, config: PipelineConfig) -> None:
        validate_config(config, SOURCE_ROOT)
        super().__init__(scope, id)
        self.config = config
        self.storage = Storage(self, "Storage", config=config)
        self.status = StatusTable(self, "Status", config=config, storage=self.storage)
        self.model = Model(
            self, "Model", config=config, storage=self.storage, repo_root=SOURCE_ROOT
        )
        self.notifications = Notifications(
            self, "Notifications", config=config, storage=self.storage
        )
        environment = PipelineEnvironment(
            table_name=self.status.table.table_name,
            data_bucket=self.storage.data_bucket.bucket_name,
            job_prefix=config.job_prefix,
            engine=config.engine,
            transform_defaults=dict(config.transform),
            model_environment=config.container_environment,
            shard_size=config.shard_size,
            split_job_threshold=parse_size(config.split_job_threshold)
            if config.split_jobs and config.split_job_threshold
            else None,
            split_instance_type=config.split_instance_type if config.split_jobs else "",
            max_rounds=config.max_rounds,
            model_name=self.model.model_name,
            model_data_url=self.model.model_data_url,
            image_uri=self.model.image_uri,
            images=self.model.images,
            gpu_ami_version=GPU_AMI_VERSION if config.image_build.gpu else "",
            sagemaker_role_arn=self.model.role.role_arn,
            kms_key_arn=self.storage.key.key_arn,
            processing_volume_gb=config.processing_volume_gb,
            processing_max_runtime_seconds=config.processing_max_runtime_hours * 3600,
            topic_arn=self.notifications.topic.topic_arn,
            event_bus_name=self.notifications.bus.event_bus_name,
            event_source=config.event_source,
            run_record_days=config.run_record_days,
            instance_budget=dict(config.admission.instance_budget),
            default_instance_budget=config.admission.default_budget,
            admission_max_wait_seconds=config.admission.max_wait_minutes * 60,
            admission_poll_seconds=config.admission.poll_seconds,
            # A lease outlives no execution: its run is gone once the execution timed out.
            lease_seconds=config.timeout_hours * 3600,
            capacity_wait_seconds=config.retry.capacity_wait_seconds,
            subnet_ids=config.vpc.subnet_ids if config.vpc else (),
            security_group_ids=config.vpc.security_group_ids if config.vpc else (),
            model_package_arn=config.model_package_arn or "",
            framework_image=(
                f"{config.framework_image.framework} {config.framework_image.version}"
                if config.framework_image
                else ""
            ),
            model_sources=tuple(self.model.model_sources),
            data_sources=config.data_sources,
            output_destinations=config.output_destinations,
            endpoints=config.endpoints,
        )
        self.split_jobs = (
            SplitJobs(self, "SplitJobs", config=config, storage=self.storage, model=self.model)
            if config.split_jobs
            else None
        )
        self.functions = Functions(
            self,
            "Functions",
            config=config,
            environment=environment,
            repo_root=SOURCE_ROOT,
            storage=self.storage,
            status=self.status,
            notifications=self.notifications,
            jobs_role=self.model.role,
        )
        self.workflow = Workflow(
            self,
            "Workflow",
            config=config,
            storage=self.storage,
            model=self.model,
            functions=self.functions,
            split_jobs=self.split_jobs,
        )
        self.triggers = Triggers(
            self,
            "Triggers",
            config=config,
            storage=self.storage,
            status=self.status,
            state_machine=self.workflow.state_machine,
            functions=self.functions,
            record_failure=self.functions.functions["record_failure"],
        )
        self.alarms = Alarms(
            self,
            "Alarms",
            config=config,
            state_machine=self.workflow.state_machine,
            functions=self.functions.functions
            | (
                {"arrivals": self.triggers.arrivals_function}
                if self.triggers.arrivals_function
                else {}
            ),
            ended_dead_letters=self.triggers.ended_dead_letters,
            dead_letters=self.triggers.dead_letters,
            topic=self.notifications.topic,
        )
        self.cli = CliAccess(
            self,
            "CliAccess",
            state_machine_arn=self.workflow.state_machine.state_machine_arn,
            storage=self.storage,
            status=self.status,
        )
        self._bucket_notifications_handler()
        self.outputs = Outputs(
            self,
            "Outputs",
            config=config,
            values={
                stack_outputs.DATA_BUCKET: self.storage.data_bucket.bucket_name,
                stack_outputs.LOG_BUCKET: self.storage.log_bucket.bucket_name,
                stack_outputs.STATE_MACHINE_ARN: self.workflow.state_machine.state_machine_arn,
                stack_outputs.TABLE_NAME: self.status.table.table_name,
                stack_outputs.TOPIC_ARN: self.notifications.topic.topic_arn,
                stack_outputs.EVENT_BUS_NAME: self.notifications.bus.event_bus_name,
                stack_outputs.EVENT_SOURCE: config.event_source,
                stack_outputs.IMAGE_URI: self.model.image_uri,
                # A config names a model or a model package (validate_config checks it).
                stack_outputs.MODEL_NAME: self.model.model_name or config.model_package_arn or "",
                stack_outputs.KMS_KEY_ARN: self.storage.key.key_arn,
                stack_outputs.CLI_POLICY_ARN: self.cli.policy.managed_policy_arn,
            },
        )

    @property
    def data_bucket(self) -> s3.Bucket:
        """Inputs, shards, outputs and run records (``input/``, ``shards/``, ``output/``,
        ``runs/``), encrypted with :attr:`key`."""
        return self.storage.data_bucket

    @property
    def access_log_bucket(self) -> s3.Bucket:
        """The data bucket's server access logs."""
        return self.storage.log_bucket

    @property
    def key(self) -> kms.Key:
        """The customer-managed key of the data, the status table, the topic and the logs."""
        return self.storage.key

    @property
    def table(self) -> dynamodb.Table:
        """The status table: runs, their shards and the instance leases."""
        return self.status.table

    @property
    def state_machine(self) -> sfn.StateMachine:
        """One execution per run; its input is the run's request."""
        return self.workflow.state_machine

    @property
    def topic(self) -> sns.Topic:
        """Failures and completions of runs."""
        return self.notifications.topic

    @property
    def event_bus(self) -> events.EventBus:
        """Where the "Batch Inference Run Finished" events go, with ``source``
        ``config.event_source``."""
        return self.notifications.bus

    @property
    def lambda_functions(self) -> Mapping[str, lambda_.Function]:
        """The Lambda of each step, by step name (``batchinfer.pipeline.contract.registry``)."""
        return self.functions.functions

    @property
    def sagemaker_model(self) -> sagemaker.CfnModel | None:
        """The default model of runs, made from ``model_data``; None with ``model_name`` (an
        existing model) or ``model_package_arn`` (each run makes its own)."""
        return self.model.model

    @property
    def jobs_role(self) -> iam.Role:
        """The role the transform and processing jobs run as."""
        return self.model.role

    @property
    def image_uri(self) -> str:
        """The image the jobs run."""
        return self.model.image_uri

    @property
    def cli_policy(self) -> iam.ManagedPolicy:
        """What a user of the ``batchinfer`` CLI needs on this pipeline."""
        return self.cli.policy

    def _bucket_notifications_handler(self) -> None:
        """The S3-to-EventBridge switch is a CDK custom resource with a managed policy; CDK
        adds its handler to the stack itself, once per stack. Left alone, the handler would
        log to a group Lambda creates unencrypted and keeps forever; it logs to one of the
        stack's log groups instead."""
        for child in Stack.of(self).node.children:
            if child.node.id.startswith("BucketNotificationsHandler"):
                log_group = encrypted_log_group(
                    self,
                    "BucketNotificationsLogs",
                    key=self.storage.key,
                    retention_days=self.config.log_retention_days,
                )
                handler = child.node.default_child
                assert isinstance(handler, CfnResource), "CDK's handler is a plain CfnResource"
                handler.add_property_override("LoggingConfig.LogGroup", log_group.log_group_name)
                acknowledge(
                    child,
                    "AwsSolutions-IAM4",
                    "CDK's bucket-notifications handler (a custom resource that only turns on "
                    "EventBridge delivery for the data bucket at deploy time) uses "
                    "AWSLambdaBasicExecutionRole for its own logs; it is not configurable.",
                    findings=[
                        "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                        "AWSLambdaBasicExecutionRole"
                    ],
                )
