"""The pipeline's Lambdas: one asset (``lambda/`` + ``batchinfer/``, bundled locally without
Docker), one function and one least-privilege role per handler, JSON logs and X-Ray."""

import shutil
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, Duration, ILocalBundling
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from batchinfer.pipeline.environment import PipelineEnvironment
from stacks.config import LOG_RETENTION_DAYS, PipelineConfig
from stacks.nag import acknowledge

RUNTIME = lambda_.Runtime.PYTHON_3_14
# name -> (memory MB, timeout seconds, what it does)
HANDLERS = {
    "plan": (512, 120, "Validate a run request, list its inputs, claim the run id"),
    "split_object": (1024, 900, "Split one input object into shards with a ManifestFile"),
    "collect": (512, 900, "Gather the shards of a run into the first job manifest"),
    "prepare_job": (256, 60, "Build the job request of one attempt with a new job name"),
    "verify": (1024, 900, "Check every shard's output and record counts; resubmit missing"),
    "finalize": (1024, 900, "Merge outputs, write _manifest.json and _SUCCESS, announce"),
    "record_failure": (256, 120, "Record a failed run and announce it"),
}


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
    """``functions[name]`` for every name in :data:`HANDLERS`; ``roles[name]`` their roles."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: PipelineConfig,
        environment: PipelineEnvironment,
        repo_root: Path,
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
        self.functions: dict[str, lambda_.Function] = {}
        self.roles: dict[str, iam.Role] = {}
        self.log_groups: dict[str, logs.LogGroup] = {}
        variables = environment.to_variables()
        for name, (memory, timeout, description) in HANDLERS.items():
            construct_id = "".join(part.title() for part in name.split("_"))
            log_group = logs.LogGroup(
                self,
                f"{construct_id}Logs",
                retention=retention(config.log_retention_days),
            )
            role = iam.Role(
                self,
                f"{construct_id}Role",
                assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                description=f"batchinfer {name} Lambda",
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="WriteOwnLogs",
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[log_group.log_group_arn],
                )
            )
            function = lambda_.Function(
                self,
                construct_id,
                code=code,
                handler=f"{name}.handler",
                runtime=RUNTIME,
                architecture=lambda_.Architecture.ARM_64,
                memory_size=memory,
                timeout=Duration.seconds(timeout),
                description=description,
                environment=variables,
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
            self.functions[name] = function
            self.roles[name] = role
            self.log_groups[name] = log_group


def retention(days: int) -> logs.RetentionDays:
    """The ``RetentionDays`` member for ``days`` (one of :data:`LOG_RETENTION_DAYS`)."""
    members = [m for m in logs.RetentionDays if m is not logs.RetentionDays.INFINITE]
    return dict(zip(LOG_RETENTION_DAYS, members, strict=True))[days]
