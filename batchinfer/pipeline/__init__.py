"""The logic behind the pipeline's Lambdas: Plan, Collect, job requests, Verify, Finalize and
the failure recorder, with the run status table and job naming. Standard library and boto3
only: this package is bundled into the Lambda asset."""
