"""The ml.* instance types batch jobs run on: which ones SageMaker accepts for which job, their
vCPUs, memory and GPUs, and indicative prices. Standard library only (the Plan Lambda
estimates with it)."""
