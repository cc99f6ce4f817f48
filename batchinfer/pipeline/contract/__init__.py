"""What the stack and the pipeline's Lambdas agree on: the step registry, the state the state
machine carries, the bucket layout, the Lambdas' environment, job names, limits, the data
places, the stack's output names and the errors that end a run."""
