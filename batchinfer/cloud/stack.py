"""A deployed stack's resources, found through its CloudFormation outputs (never through
hard-coded names; the keys are :mod:`batchinfer.pipeline.contract.stack_outputs`)."""

from dataclasses import dataclass
from typing import Any

from batchinfer.cloud.aws_errors import aws_errors
from batchinfer.errors import BatchInferError
from batchinfer.pipeline.contract import stack_outputs
from batchinfer.pipeline.storage.status_table import StatusTable


@dataclass(frozen=True)
class DeployedStack:
    name: str
    outputs: dict[str, str]
    session: Any

    @classmethod
    def find(cls, name: str, session: Any) -> "DeployedStack":
        """DescribeStacks ``name``; :class:`StackNotFound` when the region has no such stack."""
        with aws_errors(stack=name, region=session.region_name):
            stacks = session.client("cloudformation").describe_stacks(StackName=name)["Stacks"]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
        return cls(name, outputs, session)

    def output(self, key: str) -> str:
        value = self.outputs.get(key)
        if not value:
            raise BatchInferError(
                f"stack {self.name}: has no output {key}; is it a batchinfer pipeline stack "
                "(deployed from this version)?"
            )
        return value

    @property
    def state_machine_arn(self) -> str:
        return self.output(stack_outputs.STATE_MACHINE_ARN)

    @property
    def data_bucket(self) -> str:
        return self.output(stack_outputs.DATA_BUCKET)

    def status_table(self) -> StatusTable:
        return StatusTable.named(self.output(stack_outputs.TABLE_NAME), session=self.session)
