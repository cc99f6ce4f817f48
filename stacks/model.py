"""The model: the inference image, the SageMaker execution role and the SageMaker model."""

from pathlib import Path

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from batchinfer.errors import ValidationError
from batchinfer.instances.specs import accelerator
from batchinfer.pipeline.contract.layout import RUNS_PREFIX, SHARDS_PREFIX
from batchinfer.uris import parse_s3_uri
from stacks.config import PipelineConfig
from stacks.config.image import ECR_IMAGE
from stacks.data_access import JOB_OUTPUT_KEY_ACTIONS, grant_write
from stacks.framework_images import framework_image_uri
from stacks.image_builds import REPRESENTATIVE_TYPES, build_arguments
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
    """``images`` (per accelerator: builds from ``containers/`` made by ``cdk deploy``, or
    AWS's framework images) and ``image_uri`` (the default model's, or the configured
    image), ``role`` (what the transform and processing jobs run as: read input and
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
        self.images = self._images(config, repo_root)
        # The default model's image: its instance type's build (config checks one serves it).
        self.image_uri = self.images.get(
            accelerator(config.settings.instance_type), config.image_uri or ""
        )
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

    def _images(self, config: PipelineConfig, repo_root: Path) -> dict[str, str]:
        """The image of each accelerator the jobs' builds serve (image_builds.py; none for a
        configured ``image_uri``, which serves every type), with the role allowed to pull
        them."""
        self._built_images: list[ecr_assets.DockerImageAsset] = []
        self._image_repositories: list[str] = []
        if config.framework_image is not None:
            images = self._framework_images(config)
        elif config.image_uri is not None:
            images = {}
        else:
            images = {
                kind: self._build(kind, arguments, repo_root)
                for kind, arguments in build_arguments(config.image_build).items()
            }
        for uri in {*images.values(), *([config.image_uri] if config.image_uri else [])}:
            if parts := ECR_IMAGE.fullmatch(uri):  # built images are pulled by grant_pull
                self._image_repositories.append(
                    Stack.of(self).format_arn(
                        service="ecr",
                        account=parts["account"],
                        region=parts["region"],
                        resource="repository",
                        resource_name=parts["repository"],
                    )
                )
        self.grant_pull(self.role)
        return images

    def _build(self, kind: str, arguments: dict[str, str], repo_root: Path) -> str:
        image = ecr_assets.DockerImageAsset(
            self,
            "Image" if kind == "cpu" else f"{kind.capitalize()}Image",
            directory=str(repo_root),
            file=IMAGE_DOCKERFILE,
            exclude=IMAGE_CONTEXT_EXCLUDES,
            platform=ecr_assets.Platform.LINUX_AMD64,
            build_args=arguments or None,
        )
        self._built_images.append(image)
        return image.image_uri

    def _framework_images(self, config: PipelineConfig) -> dict[str, str]:
        """AWS's framework image for the default instance type's accelerator, and for the
        other where the framework has a build for it."""
        framework = config.framework_image
        assert framework is not None and config.region is not None  # checked with the config
        default_type = config.settings.instance_type
        images = {}
        for kind, representative in REPRESENTATIVE_TYPES.items():
            default = accelerator(default_type) == kind
            try:
                images[kind] = framework_image_uri(
                    framework.framework,
                    framework.version,
                    region=config.region,
                    instance_type=default_type if default else representative,
                    py_version=framework.py_version,
                    where=f"environments.{config.name}.framework_image",
                )
            except ValidationError:
                if default:
                    raise
        return images

    def image_for(self, instance_type: str) -> str:
        """The image jobs on ``instance_type`` run (the stack's default for a type no build
        serves: Plan refuses such runs)."""
        return self.images.get(accelerator(instance_type), self.image_uri)

    def grant_pull(self, role: iam.Role) -> None:
        """Let jobs running as ``role`` pull the images."""
        for image in self._built_images:
            image.repository.grant_pull(role)
        if not self._image_repositories:
            return
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PullImage",
                actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                resources=sorted(self._image_repositories),
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
