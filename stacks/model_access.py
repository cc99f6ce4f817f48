"""What the steps that create and delete a run's own model may do (run_model.py): describe
model packages and list a group's versions, create a model named inside the stack's job
prefix and pass it the jobs' role; delete such models."""

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from stacks.config import PipelineConfig
from stacks.nag import resource_finding


def model_arn(role: iam.IRole, config: PipelineConfig) -> str:
    """Every model a run of this stack may own (its name starts with the job prefix)."""
    return Stack.of(role).format_arn(
        service="sagemaker", resource="model", resource_name=f"{config.job_prefix}-*"
    )


def grant_create_run_models(
    role: iam.IRole, *, config: PipelineConfig, jobs_role: iam.IRole
) -> list[str]:
    """Let ``role`` check packages and create run models; the cdk-nag findings that leaves."""
    stack = Stack.of(role)
    packages = stack.format_arn(service="sagemaker", resource="model-package", resource_name="*")
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="DescribeModelPackages",
            actions=["sagemaker:DescribeModelPackage"],
            resources=[packages],
        )
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="ListModelPackages", actions=["sagemaker:ListModelPackages"], resources=["*"]
        )
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="CreateRunModels",
            actions=["sagemaker:CreateModel", "sagemaker:AddTags"],
            resources=[model_arn(role, config)],
        )
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="PassJobRole",
            actions=["iam:PassRole"],
            resources=[jobs_role.role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
        )
    )
    return [resource_finding(role, arn) for arn in (packages, model_arn(role, config))] + [
        "Resource::*"
    ]


def grant_delete_run_models(role: iam.IRole, *, config: PipelineConfig) -> list[str]:
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="DeleteRunModels",
            actions=["sagemaker:DeleteModel"],
            resources=[model_arn(role, config)],
        )
    )
    return [resource_finding(role, model_arn(role, config))]
