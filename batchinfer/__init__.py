"""batchinfer: SageMaker Batch Transform pipelines, deployable with CDK and runnable locally."""
