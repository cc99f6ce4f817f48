"""The stack of one environment, as ``cdk deploy`` deploys it: the pipeline construct."""

from aws_cdk import Environment, Stack
from constructs import Construct

from stacks.config import PipelineConfig
from stacks.pipeline_construct import BatchInferencePipeline


class PipelineStack(Stack):
    """``config.stack_name``, holding exactly one :class:`BatchInferencePipeline`. Its id is
    ``Default``, which CDK leaves out of logical ids: the resources' logical ids are those
    of the pipeline's own constructs (``StorageData6BB23F4E``), whoever composes them."""

    def __init__(
        self, scope: Construct, config: PipelineConfig, *, env: Environment | None = None
    ) -> None:
        super().__init__(
            scope,
            config.stack_name,
            env=env,
            description=f"batchinfer {config.name}: batch inference on SageMaker",
        )
        self.config = config
        self.pipeline = BatchInferencePipeline(self, "Default", config=config)
