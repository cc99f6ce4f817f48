"""The AWS clients and settings a pipeline Lambda works with, made once per container."""

from dataclasses import dataclass
from functools import cache
from typing import Any

from batchinfer.endpoints.scoring import REALTIME_TIMEOUT_SECONDS
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.storage.status_table import StatusTable

# Connections of the S3 client's pool: as many as the threads of one step that share it (Collect
# reads 64 shard indexes at once, Plan 64 Parquet footers; a merge and a split send 8 parts side
# by side). boto3's default of 10 would keep the others waiting for a connection.
S3_CONNECTIONS = 64


@dataclass(frozen=True)
class Services:
    env: PipelineEnvironment
    s3: Any
    events: Any
    sns: Any
    sagemaker: Any
    table: StatusTable
    runtime: Any  # sagemaker-runtime


@cache
def s3_client() -> Any:
    """The S3 client of the Lambda's region, its pool sized for the threads that share it;
    SplitObject needs nothing else, and no stack settings."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", config=Config(max_pool_connections=S3_CONNECTIONS))


@cache
def services() -> Services:
    """Clients for the Lambda's region and the stack settings from its environment."""
    import boto3
    from botocore.config import Config

    env = PipelineEnvironment.from_variables()
    return Services(
        env=env,
        s3=s3_client(),
        events=boto3.client("events"),
        sns=boto3.client("sns"),
        sagemaker=boto3.client("sagemaker"),
        table=StatusTable.named(env.table_name, env.run_record_days),
        # One attempt per call: the endpoint scoring retries throttling and 5xx itself,
        # with its own bound; a request may take the real-time limit (C8: a real-time request holds
        # at most 6 MB and takes at most 60 s).
        runtime=boto3.client(
            "sagemaker-runtime",
            config=Config(
                retries={"total_max_attempts": 1},
                read_timeout=REALTIME_TIMEOUT_SECONDS + 10,
                max_pool_connections=50,
            ),
        ),
    )
