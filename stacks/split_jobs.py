"""The split jobs: SageMaker Processing jobs in the project's image that split the input
objects too large for the SplitObject Lambda (batchinfer/pipeline/jobs/split_job.py).

Their role has the SplitObject step's data grants, from the step registry (read the input
places, by version; write shards/ by multipart upload), plus what every job needs: its
logs and metrics, the image, and network interfaces in the stack's VPC.
"""

from aws_cdk import aws_iam as iam
from constructs import Construct

from batchinfer.pipeline.contract import registry as steps
from stacks.config import PipelineConfig
from stacks.functions import grant_step, grant_step_places
from stacks.model import Model, grant_job_logs
from stacks.nag import acknowledge, resource_finding
from stacks.network import SAGEMAKER_NETWORK_ACTIONS, allow_network_interfaces
from stacks.storage import Storage

WHO = "The split jobs"


class SplitJobs(Construct):
    """``role``: what the split jobs run as."""

    def __init__(
        self, scope: Construct, id: str, *, config: PipelineConfig, storage: Storage, model: Model
    ) -> None:
        super().__init__(scope, id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="SageMaker processing jobs that split large input objects (batchinfer)",
        )
        grant_step(steps.SPLIT_OBJECT, self.role, storage, None, None, who=WHO)
        grant_step_places(steps.SPLIT_OBJECT, self.role, config, who=WHO)
        log_group_arn = grant_job_logs(self.role)
        model.grant_pull(self.role)
        if config.vpc is not None:
            allow_network_interfaces(self.role, SAGEMAKER_NETWORK_ACTIONS, "SageMaker")
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "Split jobs write logs to the /aws/sagemaker/* log groups SageMaker creates per "
            "job; ecr:GetAuthorizationToken and cloudwatch:PutMetricData "
            "(namespace-conditioned) have no resource-level permissions.",
            findings=[
                resource_finding(self.role, log_group_arn),
                resource_finding(self.role, f"{log_group_arn}:log-stream:*"),
                "Resource::*",
            ],
        )
