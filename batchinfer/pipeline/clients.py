"""The AWS clients and settings a pipeline Lambda works with, made once per container."""

from dataclasses import dataclass
from functools import cache
from typing import Any

from batchinfer.pipeline.environment import PipelineEnvironment
from batchinfer.pipeline.status_table import StatusTable


@dataclass(frozen=True)
class Services:
    env: PipelineEnvironment
    s3: Any
    events: Any
    sns: Any
    sagemaker: Any
    table: StatusTable


@cache
def services() -> Services:
    """Clients for the Lambda's region and the stack settings from its environment."""
    import boto3

    env = PipelineEnvironment.from_variables()
    return Services(
        env=env,
        s3=boto3.client("s3"),
        events=boto3.client("events"),
        sns=boto3.client("sns"),
        sagemaker=boto3.client("sagemaker"),
        table=StatusTable.named(env.table_name, int(env.run_record_days)),
    )
