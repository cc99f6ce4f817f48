"""Running in the configured VPC (``vpc`` in cdk.json): the Lambdas in its subnets, and the
network-interface permissions the Lambdas and the SageMaker jobs need there."""

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from stacks.config.vpc import VpcConfig
from stacks.nag import acknowledge

# What the Lambda service does with a function's role to place it in subnets (the actions
# of AWSLambdaVPCAccessExecutionRole).
LAMBDA_NETWORK_ACTIONS = [
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
]
# What SageMaker does with a job's role to run it in a VPC.
SAGEMAKER_NETWORK_ACTIONS = [
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
]


def allow_network_interfaces(role: iam.Role, actions: list[str], who: str) -> None:
    """Let ``who`` (the Lambda service, SageMaker) manage network interfaces for ``role``."""
    role.add_to_policy(
        iam.PolicyStatement(sid="NetworkInterfaces", actions=actions, resources=["*"])
    )
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        f"{who} creates, describes and deletes the network interfaces that place this role's "
        "work in the configured subnets; EC2 authorizes these calls only on * (the interfaces "
        "do not exist before they are created).",
        findings=["Resource::*"],
    )


def place_function(function: lambda_.Function, role: iam.Role, vpc: VpcConfig) -> None:
    """Run ``function`` in the VPC's subnets with its security groups."""
    cfn = function.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction)
    cfn.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
        subnet_ids=list(vpc.subnet_ids), security_group_ids=list(vpc.security_group_ids)
    )
    allow_network_interfaces(role, LAMBDA_NETWORK_ACTIONS, "The Lambda service")
