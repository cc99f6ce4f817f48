"""The CDK constructs of the pipeline, one per capability, and the stack composing them."""
