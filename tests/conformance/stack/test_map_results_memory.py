"""Verify reads the CountShards Map's results in bounded memory: the results are written as
Step Functions writes them for the ResultWriter the synthesized definition declares, to an
S3 server in another process (so only Verify's own reading is measured), and Verify's peak
Python memory over 50,000 shards stays under a few MiB. The whole-file reading it replaced
grows with the shards: about 5 KiB a shard of AWS's default results of 1.3 KiB a shard
(measured here at 2,000 shards, so the test stays small)."""

import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from batchinfer.pipeline.contract.layout import MAP_RESULTS_PREFIX
from batchinfer.pipeline.steps.verify import read_counts
from batchinfer.pipeline.storage.s3io import read_json
from batchinfer.uris import S3Location
from tests.support.map_results import Child, write_map_results
from tests.support.s3_server import FAKE_CREDENTIALS

from .definition import all_states, definitions

BUCKET = "results"
SHARDS = 50_000
BOUND = 4 * 1024 * 1024
MAP_RUN = "arn:aws:states:eu-west-1:123456789012:mapRun:runs-StateMachine/CountShards:0f1e2d3c"
SETTINGS = {"content_type": "text/csv", "split_type": "Line", "accept": "text/csv"}


@pytest.fixture(scope="module")
def writer_config(synthesized) -> dict[str, str] | None:
    (definition,) = definitions(synthesized.template_json).values()
    return all_states(definition["States"])["CountShards"]["ResultWriter"].get("WriterConfig")


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    """A client of moto's S3 server running in a process of its own."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name="us-east-1",
            aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        for _ in range(200):
            try:
                client.create_bucket(Bucket=BUCKET)
                break
            except Exception:
                time.sleep(0.1)
        yield client
    finally:
        server.terminate()
        server.wait(timeout=30)


def shard_checks(count: int) -> list[Child]:
    """CountShard's input and answer for ``count`` valid shards, as the Map runs them."""
    children = []
    for number in range(count):
        shard = {
            "number": number,
            "name": f"big/part-{number:06d}.csv",
            "input": f"s3://data/input/big/part-{number:06d}.csv",
            "input_name": f"part-{number:06d}.csv",
            "size": 1048576,
            "compression": "None",
        }
        event = {
            "shard": shard,
            "job_output": "s3://data/runs/r/output/",
            "shards_prefix": "s3://data/shards/r/",
            "settings": SETTINGS,
        }
        answer = {
            "shard": shard,
            "output": f"s3://data/runs/r/output/big/part-{number:06d}.csv.out",
            "problem": None,
            "records": {"records_in": 1000, "records_out": 1000},
        }
        children.append(Child(event, answer))
    return children


def peak_of(read: Any) -> tuple[Any, int]:
    """What ``read()`` returns and the peak Python memory it took."""
    tracemalloc.start()
    try:
        value = read()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_verify_reads_the_declared_results_of_50k_shards_in_bounded_memory(s3, writer_config):
    key = write_map_results(
        s3, BUCKET, MAP_RESULTS_PREFIX, MAP_RUN, shard_checks(SHARDS), writer_config
    )
    manifest = S3Location(BUCKET, key)
    counted, peak = peak_of(lambda: sum(1 for _ in read_counts(s3, manifest)))
    assert counted == SHARDS
    assert peak < BOUND, f"Verify's reading peaked at {peak / 2**20:.1f} MiB for {SHARDS} shards"


def test_the_whole_file_reading_of_aws_default_results_grows_with_the_shards(s3):
    """No WriterConfig: each child with its metadata and Input, the whole file parsed."""
    shards = 2_000
    key = write_map_results(s3, BUCKET, "default", MAP_RUN, shard_checks(shards), None)
    (listed,) = read_json(s3, S3Location(BUCKET, key))["ResultFiles"]["SUCCEEDED"]
    results, peak = peak_of(lambda: read_json(s3, S3Location(BUCKET, listed["Key"])))
    assert len(results) == shards and "Input" in results[0] and "StartDate" in results[0]
    assert listed["Size"] / shards > 1000, "each child with its metadata and input"
    assert peak / shards > 4 * 1024, f"{peak / shards:.0f} bytes a shard"
