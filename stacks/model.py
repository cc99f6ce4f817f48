"""The model: the inference image, the SageMaker execution role and the SageMaker model."""

from pathlib import Path
from typing import Any

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from batchinfer.pipeline.contract.layout import RUNS_PREFIX, SHARDS_PREFIX
from batchinfer.uris import parse_s3_uri
from stacks.config import PipelineConfig
from stacks.config.image import ECR_IMAGE
from stacks.data_access import JOB_OUTPUT_KEY_ACTIONS, grant_write
from stacks.framework_images import framework_image_uri
from stacks.nag import acknowledge, resource_finding
from stacks.network import SAGEMAKER_NETWORK_ACTIONS, allow_network_interfaces
from stacks.storage import Storage

# The image is built from the repository root (it installs batchinfer); everything else
# stays out of the build context.
IMAGE_DOCKERFILE = "containers/inference/Dockerfile"
IMAGE_CONTEXT_EXCLUDES = [
    ".git",
    ".venv",
    "node_modules",
    "cdk.out",
    "cdk.*.out",
    "tests",
    "bench",
    "examples/.work",
    "**/__pycache__",
    "**/*.pyc",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "*.egg-info",
    "build",
    "dist",
]


def grant_job_logs(role: iam.Role) -> str:
    """Let the jobs running as ``role`` write their logs and metrics; the log groups' ARN."""
    log_group_arn = Stack.of(role).format_arn(
        service="logs",
        resource="log-group",
        resource_name="/aws/sagemaker/*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="JobLogs",
            actions=[
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:PutLogEvents",
                "logs:DescribeLogStreams",
            ],
            resources=[log_group_arn, f"{log_group_arn}:log-stream:*"],
        )
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="JobMetrics",
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            # A wildcard value needs StringLike: StringEquals would match no namespace.
            conditions={"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}},
        )
    )
    return log_group_arn


class Model(Construct):
    """``image_uri`` (the configured image, or one built from ``containers/`` by ``cdk
    deploy``), ``role`` (what the transform and processing jobs run as: read input and
    shards, write output, use the key, pull the image), and ``model`` (network isolation
    on)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: PipelineConfig,
        storage: Storage,
        repo_root: Path,
    ) -> None:
        super().__init__(scope, id)
        self.role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="SageMaker transform and processing jobs of batchinfer",
        )
        # Jobs read the run's shards (every input is split or copied there) and manifests.
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadShardsAndManifests",
                actions=["s3:GetObject"],
                resources=[storage.data_arn(SHARDS_PREFIX), storage.data_arn(RUNS_PREFIX)],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteOutputs",
                actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                resources=[storage.data_arn("output/"), storage.data_arn(RUNS_PREFIX)],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="UseDataKey",
                actions=JOB_OUTPUT_KEY_ACTIONS,
                resources=[storage.key.key_arn],
            )
        )
        # Jobs read only the run's shards (Collect copies every input there); they write
        # the outputs of runs whose outputs are not merged straight to a destination.
        destinations = grant_write(
            self.role,
            config.output_destinations,
            "WriteDestinations",
            key_actions=JOB_OUTPUT_KEY_ACTIONS,
        )
        self.image_uri = self._image(config, repo_root)
        log_group_arn = grant_job_logs(self.role)
        if config.vpc is not None:
            allow_network_interfaces(self.role, SAGEMAKER_NETWORK_ACTIONS, "SageMaker")
        self.model_data_url = self._model_data(config, repo_root)
        self.model_sources = self._model_sources(config)
        # The model runs use by default: one made here from model_data, the existing one
        # named, or none (a package: each run gets its own, run_model.py).
        self.model: sagemaker.CfnModel | None = None
        self.model_name = config.model_name or ""
        if config.model_data is not None:
            self.model = sagemaker.CfnModel(
                self,
                "Model",
                execution_role_arn=self.role.role_arn,
                enable_network_isolation=True,
                primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                    image=self.image_uri,
                    model_data_url=self.model_data_url,
                    environment=config.container_environment or None,
                ),
                # Transform jobs run in the model's VPC; processing jobs take it in their
                # request.
                vpc_config=sagemaker.CfnModel.VpcConfigProperty(
                    subnets=list(config.vpc.subnet_ids),
                    security_group_ids=list(config.vpc.security_group_ids),
                )
                if config.vpc
                else None,
            )
            # SageMaker checks the role's permissions when the model is created.
            self.model.node.add_dependency(self.role.node.find_child("DefaultPolicy"))
            self.model_name = self.model.attr_model_name
        wildcard_resources = [
            *(storage.data_arn(p) for p in (SHARDS_PREFIX, RUNS_PREFIX, "output/")),
            log_group_arn,
            f"{log_group_arn}:log-stream:*",
            "*",
            *self._model_data_resources,
        ]
        if destinations:
            acknowledge(
                self.role,
                "AwsSolutions-IAM5",
                "Jobs write the objects of per-run folders under the configured output "
                "destinations' prefixes.",
                findings=destinations,
            )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "Jobs read and write the objects of their own data prefixes (shards/, runs/, "
            "output/) and a model asset, write logs to the /aws/sagemaker/* log "
            "groups SageMaker creates per job, use the stack key through S3 and EBS, and "
            "ecr:GetAuthorizationToken and cloudwatch:PutMetricData (namespace-conditioned) "
            "have no resource-level permissions.",
            findings=[
                *(resource_finding(self, r) for r in wildcard_resources),
                *(
                    ["Action::s3:GetBucket*", "Action::s3:GetObject*", "Action::s3:List*"]
                    if config.is_local_model
                    else []
                ),
            ],
        )

    def _image(self, config: PipelineConfig, repo_root: Path) -> str:
        """The image the jobs run, with the role allowed to pull it."""
        image_uri = config.image_uri
        if config.framework_image is not None:
            assert config.region is not None  # checked with the config
            image_uri = framework_image_uri(
                config.framework_image.framework,
                config.framework_image.version,
                region=config.region,
                instance_type=config.settings.instance_type,
                py_version=config.framework_image.py_version,
                where=f"environments.{config.name}.framework_image",
            )
        if image_uri is None:
            image = ecr_assets.DockerImageAsset(
                self,
                "Image",
                directory=str(repo_root),
                file=IMAGE_DOCKERFILE,
                exclude=IMAGE_CONTEXT_EXCLUDES,
                platform=ecr_assets.Platform.LINUX_AMD64,
            )
            self._image_repository: Any = image.repository
            self.grant_pull(self.role)
            return image.image_uri
        parts = ECR_IMAGE.fullmatch(image_uri)
        assert parts is not None  # checked with the config, or made by the SDK
        self._image_repository = Stack.of(self).format_arn(
            service="ecr",
            account=parts["account"],
            region=parts["region"],
            resource="repository",
            resource_name=parts["repository"],
        )
        self.grant_pull(self.role)
        return image_uri

    def grant_pull(self, role: iam.Role) -> None:
        """Let jobs running as ``role`` pull the image."""
        if not isinstance(self._image_repository, str):
            self._image_repository.grant_pull(role)
            return
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PullImage",
                actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                resources=[self._image_repository],
            )
        )
        # (grant_pull of a built image includes the token)
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PullImageAuthorization",
                actions=["ecr:GetAuthorizationToken"],
                resources=["*"],
            )
        )

    def _model_data(self, config: PipelineConfig, repo_root: Path) -> str:
        """The S3 URL of ``model_data`` (a local archive becomes an asset), or ""."""
        self._model_data_resources: list[str] = []
        if config.model_data is None or not config.is_local_model:
            return config.model_data or ""
        self.model_asset = s3_assets.Asset(
            self, "ModelData", path=str(repo_root / config.model_data)
        )
        self.model_asset.grant_read(self.role)
        self._model_data_resources = [self.model_asset.bucket.arn_for_objects("*")]
        return self.model_asset.s3_object_url

    def _model_sources(self, config: PipelineConfig) -> list[str]:
        """Let the jobs read model data under the configured sources and ``model_data``;
        a processing job gets the model as an S3Prefix input, which SageMaker lists."""
        sources = [parse_s3_uri(uri, field="model_sources") for uri in config.model_source_list]
        if not sources:
            return []
        partition = Stack.of(self).partition
        objects = [f"arn:{partition}:s3:::{s.bucket}/{s.key}*" for s in sources]
        self.role.add_to_policy(
            iam.PolicyStatement(sid="ReadModelData", actions=["s3:GetObject"], resources=objects)
        )
        for number, source in enumerate(sources):
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid=f"ListModelData{number}",
                    actions=["s3:ListBucket"],
                    resources=[f"arn:{partition}:s3:::{source.bucket}"],
                    conditions={"StringLike": {"s3:prefix": [f"{source.key}*"]}},
                )
            )
        self._model_data_resources += objects
        return config.model_source_list
