"""The pipeline's Lambdas: one asset (``lambda/`` + ``batchinfer/``, bundled locally without
Docker), one function and one least-privilege role per step of the registry
(:data:`batchinfer.pipeline.contract.registry.STEPS`), JSON logs and X-Ray."""

import shutil
from pathlib import Path

import jsii
from aws_cdk import (
    AssetHashType,
    BundlingOptions,
    DockerImage,
    Duration,
    ILocalBundling,
    Stack,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.layout import INPUT_PREFIX, OUTPUT_PREFIX
from batchinfer.pipeline.contract.registry import STEPS, Step
from stacks.config import PipelineConfig
from stacks.data_access import grant_list, grant_read, grant_write
from stacks.log_groups import encrypted_log_group
from stacks.model_access import grant_create_run_models, grant_delete_run_models
from stacks.nag import acknowledge, resource_finding
from stacks.network import place_function
from stacks.operations import Notifications
from stacks.status_table import StatusTable
from stacks.storage import Storage

RUNTIME = lambda_.Runtime.PYTHON_3_14


@jsii.implements(ILocalBundling)
class CopySources:
    """Local bundling: the handlers of ``lambda/`` at the asset root next to the
    ``batchinfer`` package (Python sources only; boto3 comes with the runtime)."""

    def __init__(self, repo_root: Path) -> None:
        self.repo_root = repo_root

    def try_bundle(self, output_dir: str, *_options: object, **_kwargs: object) -> bool:
        out = Path(output_dir)
        for handler in sorted((self.repo_root / "lambda").glob("*.py")):
            shutil.copy2(handler, out / handler.name)
        shutil.copytree(
            self.repo_root / "batchinfer",
            out / "batchinfer",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            dirs_exist_ok=True,
        )
        return True


class Functions(Construct):
    """``functions[name]`` for every step name; ``roles[name]`` their roles; ``code`` the
    asset every Lambda of the stack runs."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: PipelineConfig,
        environment: PipelineEnvironment,
        repo_root: Path,
        storage: Storage,
        status: StatusTable,
        notifications: Notifications,
        jobs_role: iam.IRole,
    ) -> None:
        super().__init__(scope, id)
        code = lambda_.Code.from_asset(
            str(repo_root / "lambda"),
            asset_hash_type=AssetHashType.OUTPUT,
            bundling=BundlingOptions(
                # Never pulled: local bundling always succeeds.
                image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
                local=CopySources(repo_root),
            ),
        )
        self.code = code
        self.functions: dict[str, lambda_.Function] = {}
        self.roles: dict[str, iam.Role] = {}
        self.log_groups: dict[str, logs.LogGroup] = {}
        variables = environment.to_variables()
        for step in STEPS:
            name = step.name
            function, role, log_group = lambda_function(
                self,
                step.construct_id,
                code=code,
                handler=step.handler,
                memory_mb=step.memory_mb,
                timeout_seconds=step.timeout_seconds,
                description=step.description,
                environment=variables,
                config=config,
                key=storage.key,
            )
            self.functions[name] = function
            self.roles[name] = role
            self.log_groups[name] = log_group
            grant_step(step, role, storage, status, notifications)
            grant_step_places(step, role, config)
            _grant_run_models(step, role, config, jobs_role)
            _grant_endpoints(step, role, config)


def lambda_function(
    scope: Construct,
    construct_id: str,
    *,
    code: lambda_.Code,
    handler: str,
    memory_mb: int,
    timeout_seconds: int,
    description: str,
    environment: dict[str, str],
    config: PipelineConfig,
    key: kms.IKey,
) -> tuple[lambda_.Function, iam.Role, logs.LogGroup]:
    """One of the stack's Lambdas as they all are: its own role that writes only its own
    log group (encrypted with ``key``), JSON logs, X-Ray, arm64, in the VPC when there is
    one."""
    log_group = encrypted_log_group(
        scope, f"{construct_id}Logs", key=key, retention_days=config.log_retention_days
    )
    role = iam.Role(
        scope,
        f"{construct_id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"batchinfer {handler.removesuffix('.handler')} Lambda",
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="WriteOwnLogs",
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[log_group.log_group_arn],
        )
    )
    function = lambda_.Function(
        scope,
        construct_id,
        code=code,
        handler=handler,
        runtime=RUNTIME,
        architecture=lambda_.Architecture.ARM_64,
        memory_size=memory_mb,
        timeout=Duration.seconds(timeout_seconds),
        description=description,
        environment=environment,
        role=role,
        log_group=log_group,
        logging_format=lambda_.LoggingFormat.JSON,
        tracing=lambda_.Tracing.ACTIVE,
    )
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        "X-Ray PutTraceSegments/PutTelemetryRecords have no resource-level "
        "permissions (the service authorizes them only on *).",
        findings=["Resource::*"],
    )
    if config.vpc is not None:
        place_function(function, role, config.vpc)
    return function, role, log_group


def grant_step(
    step: Step,
    role: iam.Role,
    storage: Storage,
    status: StatusTable | None,
    notifications: Notifications | None,
    who: str = "",
) -> None:
    """Least privilege for ``step`` as the registry declares it: its S3 prefixes, the
    table actions it calls, the key uses those imply, the announcers' topic and bus.
    ``who`` names the role's user in the acknowledgements (default: the step's Lambda)."""
    who = who or f"The {step.name} Lambda"
    findings = []
    if step.reads:
        # A split copies the version of an object it measured (the bucket is versioned).
        versions = ["s3:GetObjectVersion"] if step.pins_versions else []
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadData",
                actions=["s3:GetObject", *versions],
                resources=[storage.data_arn(p) for p in step.reads],
            )
        )
        findings += [resource_finding(role, storage.data_arn(p)) for p in step.reads]
    if step.lists:
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ListData",
                actions=["s3:ListBucket"],
                resources=[storage.data_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{p}*" for p in step.lists]}},
            )
        )
    if step.writes:
        aborts = ["s3:AbortMultipartUpload"] if step.multipart else []
        role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteData",
                actions=["s3:PutObject", *aborts],
                resources=[storage.data_arn(p) for p in step.writes],
            )
        )
        findings += [resource_finding(role, storage.data_arn(p)) for p in step.writes]
    if step.table:
        assert status is not None, f"{step.name} uses the status table"
        role.add_to_policy(
            iam.PolicyStatement(
                sid="StatusTable",
                actions=[f"dynamodb:{action}" for action in step.table],
                resources=[status.table.table_arn],
            )
        )
    key_actions = _key_actions(step)
    if key_actions:
        role.add_to_policy(
            iam.PolicyStatement(
                sid="UseDataKey", actions=key_actions, resources=[storage.key.key_arn]
            )
        )
    if step.announces:
        assert notifications is not None, f"{step.name} announces"
        # The topic's key is the stack's: UseDataKey covers publishing to it.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="Announce", actions=["sns:Publish"], resources=[notifications.topic.topic_arn]
            )
        )
        notifications.bus.grant_put_events_to(role)
    if findings:
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            f"{who} works on objects of per-run folders under fixed "
            "prefixes of the data bucket (run ids are chosen at run time).",
            findings=sorted(set(findings)),
        )


TABLE_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"})


def _key_actions(step: Step) -> list[str]:
    """The stack key's uses behind the step's S3 objects (SSE-KMS), table items and topic
    messages: reading decrypts, writing asks for a data key (a multipart upload and a
    publish decrypt it again)."""
    decrypt = bool(step.reads or step.table or step.multipart or step.announces)
    data_key = bool(step.writes or set(step.table) & TABLE_WRITES or step.announces)
    return [a for a, used in (("kms:Decrypt", decrypt), ("kms:GenerateDataKey", data_key)) if used]


def grant_step_places(step: Step, role: iam.Role, config: PipelineConfig, who: str = "") -> None:
    """A step that reads inputs reads the data sources too; one that reads or writes
    outputs does the same on the output destinations."""
    who = who or f"The {step.name} Lambda"
    findings = []
    if INPUT_PREFIX in step.lists:
        grant_list(role, config.data_sources, "ListSources")
    if INPUT_PREFIX in step.reads:
        findings += grant_read(
            role, config.data_sources, "ReadSources", versions=step.pins_versions
        )
    if OUTPUT_PREFIX in step.reads:
        findings += grant_read(role, config.output_destinations, "ReadDestinations")
    if OUTPUT_PREFIX in step.writes:
        findings += grant_write(role, config.output_destinations, "WriteDestinations")
    if findings:
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            f"{who} works on the objects under the configured data sources' "
            "and output destinations' prefixes, whose names runs choose.",
            findings=sorted(set(findings)),
        )


def _grant_run_models(
    step: Step, role: iam.Role, config: PipelineConfig, jobs_role: iam.IRole
) -> None:
    findings = []
    if step.creates_run_models:
        findings += grant_create_run_models(role, config=config, jobs_role=jobs_role)
    if step.deletes_run_models:
        findings += grant_delete_run_models(role, config=config)
    if findings:
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            f"The {step.name} Lambda works on the models runs own, named with the stack's "
            "job prefix at run time, reads any model package a run may name, and "
            "sagemaker:ListModelPackages has no resource scope.",
            findings=sorted(set(findings)),
        )


def _grant_endpoints(step: Step, role: iam.Role, config: PipelineConfig) -> None:
    """InvokeEndpoint (the scoring step) and DescribeEndpoint (Plan) on the configured
    endpoints only; nothing when none is configured."""
    actions = [
        action
        for action, used in (
            ("sagemaker:DescribeEndpoint", step.describes_endpoints),
            ("sagemaker:InvokeEndpoint", step.invokes_endpoints),
        )
        if used
    ]
    if not actions or not config.endpoints:
        return
    stack = Stack.of(role)
    role.add_to_policy(
        iam.PolicyStatement(
            sid="Endpoints",
            actions=actions,
            # SageMaker ARNs are lowercase.
            resources=[
                stack.format_arn(
                    service="sagemaker", resource="endpoint", resource_name=e.name.lower()
                )
                for e in config.endpoints
            ],
        )
    )
