"""batchinfer: SageMaker Batch Transform pipelines, deployable with CDK and runnable locally."""

__version__ = "0.1.0"
