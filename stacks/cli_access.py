"""The managed policy a user of the ``batchinfer`` CLI needs for this stack: find it by its
outputs, start and follow runs, stage inputs and read results. Attach it to the users' or
CI's role; its ARN is the stack output ``CliPolicyArn``."""

from aws_cdk import ArnFormat, Aws, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from batchinfer.pipeline.layout import INPUT_PREFIX, OUTPUT_PREFIX
from batchinfer.pipeline.status_table import STATUS_INDEX
from stacks.nag import acknowledge, resource_finding
from stacks.status_table import StatusTable
from stacks.storage import Storage


class CliAccess(Construct):
    """``policy``: what ``submit``, ``status`` and ``runs`` call, and the staging of inputs."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        state_machine_arn: str,
        storage: Storage,
        status: StatusTable,
    ) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        stack_arn = stack.format_arn(
            service="cloudformation", resource="stack", resource_name=f"{Aws.STACK_NAME}/*"
        )
        table = status.table.table_arn
        index = f"{table}/index/{STATUS_INDEX}"
        machine = stack.split_arn(state_machine_arn, ArnFormat.COLON_RESOURCE_NAME).resource_name
        executions = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{machine}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        statements = [
            iam.PolicyStatement(
                sid="FindStack", actions=["cloudformation:DescribeStacks"], resources=[stack_arn]
            ),
            iam.PolicyStatement(
                sid="StartRuns", actions=["states:StartExecution"], resources=[state_machine_arn]
            ),
            iam.PolicyStatement(
                sid="FollowRuns",
                actions=["states:DescribeExecution", "states:StopExecution"],
                resources=[executions],
            ),
            iam.PolicyStatement(
                sid="ReadRunStatus",
                actions=["dynamodb:GetItem", "dynamodb:Query"],
                resources=[table, index],
            ),
            iam.PolicyStatement(
                sid="StageInputs",
                actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                resources=[storage.data_arn(INPUT_PREFIX)],
            ),
            iam.PolicyStatement(
                sid="ReadResults",
                actions=["s3:GetObject"],
                resources=[storage.data_arn(OUTPUT_PREFIX)],
            ),
            iam.PolicyStatement(
                sid="ListData",
                actions=["s3:ListBucket"],
                resources=[storage.data_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{INPUT_PREFIX}*", f"{OUTPUT_PREFIX}*"]}},
            ),
            iam.PolicyStatement(
                sid="UseDataKey",
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=[storage.key.key_arn],
            ),
        ]
        self.policy = iam.ManagedPolicy(
            self,
            "CliPolicy",
            description="batchinfer CLI: submit, status and runs; stage inputs, read results",
            statements=statements,
        )
        acknowledge(
            self.policy,
            "AwsSolutions-IAM5",
            "CLI users read their runs' executions (named by run id at start), stage inputs "
            "under input/ and read results under output/ of the data bucket, and find the "
            "stack by its name whatever its id.",
            findings=[
                resource_finding(self.policy, arn)
                for arn in (
                    stack_arn,
                    executions,
                    storage.data_arn(INPUT_PREFIX),
                    storage.data_arn(OUTPUT_PREFIX),
                )
            ],
        )
