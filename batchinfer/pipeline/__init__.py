"""The logic behind the pipeline's Lambdas, in four kinds of module (each subpackage imports
only from those listed after it):

- ``steps``: one module per Lambda, named as the step (``plan``, ``collect``, ``verify``, ...);
  a step never imports another step;
- ``jobs``: what a run asks for: its request, its jobs' Create*Job requests, its split jobs,
  its own model and its estimate;
- ``storage``: the AWS-facing stores: S3 I/O, the status table, instance leases, clients,
  notifications, the ordered merge;
- ``contract``: what the stack and the Lambdas agree on: the step registry, the typed state,
  the bucket layout, the environment, job names, limits, data places, stack outputs and the
  errors that end a run.

Standard library and boto3 only: this package is bundled into the Lambda asset.
"""
