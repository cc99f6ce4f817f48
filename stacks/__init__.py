"""The CDK constructs of the pipeline, one per capability; :class:`BatchInferencePipeline`
composes them for any stack, :class:`PipelineStack` is the stack of one environment."""

from stacks.pipeline_construct import BatchInferencePipeline
from stacks.pipeline_stack import PipelineStack

__all__ = ["BatchInferencePipeline", "PipelineStack"]
