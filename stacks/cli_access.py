"""The managed policy a user of the ``batchinfer`` CLI needs for this stack: find it by its
outputs (``submit``, ``status``, ``runs``), start runs, read the status table, and stage
inputs under ``input/``. Attach it to the users' or CI's role; its ARN is the stack output
``CliPolicyArn``."""

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from batchinfer.pipeline.contract.layout import INPUT_PREFIX
from batchinfer.pipeline.storage.status_table import STATUS_INDEX
from stacks.nag import acknowledge, resource_finding
from stacks.status_table import StatusTable
from stacks.storage import Storage


class CliAccess(Construct):
    """``policy``: what the CLI calls, and the staging of inputs with ``aws s3 cp``."""

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
        stack_arn = Stack.of(self).format_arn(
            service="cloudformation", resource="stack", resource_name=f"{Aws.STACK_NAME}/*"
        )
        table = status.table.table_arn
        inputs = storage.data_arn(INPUT_PREFIX)
        self.policy = iam.ManagedPolicy(
            self,
            "CliPolicy",
            description="batchinfer CLI: submit, status and runs; stage inputs under input/",
            statements=[
                iam.PolicyStatement(
                    sid="FindStack",
                    actions=["cloudformation:DescribeStacks"],
                    resources=[stack_arn],
                ),
                iam.PolicyStatement(
                    sid="StartRuns",
                    actions=["states:StartExecution"],
                    resources=[state_machine_arn],
                ),
                iam.PolicyStatement(
                    sid="ReadRuns",
                    actions=["dynamodb:GetItem", "dynamodb:Query"],
                    resources=[table],
                ),
                iam.PolicyStatement(
                    sid="ListRunsByStatus",
                    actions=["dynamodb:Query"],
                    resources=[f"{table}/index/{STATUS_INDEX}"],
                ),
                iam.PolicyStatement(
                    sid="StageInputs",
                    actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                    resources=[inputs],
                ),
                iam.PolicyStatement(
                    sid="UseDataKey",
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[storage.key.key_arn],
                ),
            ],
        )
        acknowledge(
            self.policy,
            "AwsSolutions-IAM5",
            "CLI users find the stack by its name whatever its id, and stage inputs as "
            "objects under input/ of the data bucket.",
            findings=[resource_finding(self.policy, arn) for arn in (stack_arn, inputs)],
        )
