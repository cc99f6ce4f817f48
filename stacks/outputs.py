"""Outputs for other teams: exported CfnOutputs mirrored as SSM parameters."""

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from batchinfer.pipeline.contract import stack_outputs
from stacks.config import PipelineConfig


class Outputs(Construct):
    """One exported output and one SSM parameter per value (keys in
    :mod:`batchinfer.pipeline.contract.stack_outputs`)."""

    def __init__(
        self, scope: Construct, id: str, *, config: PipelineConfig, values: dict[str, str]
    ) -> None:
        super().__init__(scope, id)
        unknown = set(values) - set(stack_outputs.ALL)
        if unknown:
            raise ValueError(f"outputs without a declared key: {sorted(unknown)}")
        stack = Stack.of(self)
        for key, value in values.items():
            CfnOutput(
                stack,
                key,
                value=value,
                export_name=stack_outputs.export_name(stack.stack_name, key),
            )
            ssm.StringParameter(
                self,
                key,
                parameter_name=stack_outputs.parameter_name(config.name, key),
                string_value=value,
                description=f"batchinfer {config.name}: {key}",
            )
