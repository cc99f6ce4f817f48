"""The AWS clients and settings a pipeline Lambda works with, made once per container.

Their session reads the timestamps of AWS answers without dateutil. botocore reads each with
dateutil's general parser, about 65 µs on one core: a ListObjectsV2 page holds 1,000
LastModified values and each GetObject answer one, so a step that lists or reads 100,000
objects would spend about 6.5 s of its CPU on dates no step looks at. The forms AWS sends
(ISO 8601 in XML and JSON bodies, RFC 1123 in headers such as Last-Modified, epoch seconds
in JSON) are read here by the standard library in about a microsecond, as the same instants
botocore gives; anything else goes to botocore's own parser.
"""

import datetime
import email.utils
from dataclasses import dataclass
from functools import cache
from typing import Any

from batchinfer.endpoints.scoring import REALTIME_TIMEOUT_SECONDS
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.storage.status_table import StatusTable

# Connections of the S3 client's pool: as many as the threads of one step that share it (Plan
# reads 128 Parquet footers at once, Collect up to 64 shard indexes; a merge and a split send 8
# parts side by side). boto3's default of 10 would keep the others waiting for a connection.
S3_CONNECTIONS = 128


@dataclass(frozen=True)
class Services:
    env: PipelineEnvironment
    s3: Any
    events: Any
    sns: Any
    sagemaker: Any
    table: StatusTable
    runtime: Any  # sagemaker-runtime


def read_timestamp(value: Any) -> datetime.datetime:
    """``value`` as botocore's ``parse_timestamp`` reads it, the forms AWS sends quickly."""
    if isinstance(value, str):
        try:
            if len(value) >= 19 and value[10] == "T":  # 2025-01-01T12:34:56[.000]Z
                return datetime.datetime.fromisoformat(value)
            if len(value) == 29 and value.endswith(" GMT"):  # Wed, 01 Jan 2025 12:34:56 GMT
                return email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            pass
    from botocore.utils import parse_timestamp

    return parse_timestamp(value)


def aws_session() -> Any:
    """A boto3 session (credentials and region as boto3's default session finds them) whose
    clients read timestamps with :func:`read_timestamp`."""
    import boto3
    import botocore.session

    core = botocore.session.get_session()
    parsers = core.get_component("response_parser_factory")
    parsers.set_parser_defaults(timestamp_parser=read_timestamp)
    return boto3.Session(botocore_session=core)


@cache
def s3_client() -> Any:
    """The S3 client of the Lambda's region, its pool sized for the threads that share it;
    SplitObject needs nothing else, and no stack settings."""
    from botocore.config import Config

    return aws_session().client("s3", config=Config(max_pool_connections=S3_CONNECTIONS))


@cache
def services() -> Services:
    """Clients for the Lambda's region and the stack settings from its environment."""
    from botocore.config import Config

    env = PipelineEnvironment.from_variables()
    session = aws_session()
    return Services(
        env=env,
        s3=s3_client(),
        events=session.client("events"),
        sns=session.client("sns"),
        sagemaker=session.client("sagemaker"),
        table=StatusTable.named(env.table_name, env.run_record_days, session=session),
        # One attempt per call: the endpoint scoring retries throttling and 5xx itself,
        # with its own bound; a request may take the real-time limit (C8: a real-time request holds
        # at most 6 MB and takes at most 60 s).
        runtime=session.client(
            "sagemaker-runtime",
            config=Config(
                retries={"total_max_attempts": 1},
                read_timeout=REALTIME_TIMEOUT_SECONDS + 10,
                max_pool_connections=50,
            ),
        ),
    )
