"""A Distributed Map's results as Step Functions' result writer leaves them: under
``<prefix>/<map run id>/``, ``SUCCEEDED_0.json`` (the child executions, each ``Output`` a
JSON string) and ``manifest.json`` listing it; and the CountShards Map played in-process."""

import json
import uuid
from collections.abc import Callable
from typing import Any

from batchinfer.pipeline.contract.layout import MAP_RESULTS_PREFIX


def write_map_results(
    s3: Any, bucket: str, prefix: str, map_run_arn: str, outputs: list[Any]
) -> str:
    """Write the results of the succeeded children whose outputs are ``outputs``; the key of
    the manifest."""
    folder = (prefix.rstrip("/") + "/" if prefix else "") + map_run_arn.split(":")[-1] + "/"
    results = [
        {
            "ExecutionArn": f"{map_run_arn}:{number}",
            "Name": str(number),
            "Output": json.dumps(output),
            "OutputDetails": {"Included": True},
            "Status": "SUCCEEDED",
        }
        for number, output in enumerate(outputs)
    ]
    files: list[dict[str, Any]] = []
    if results:
        body = json.dumps(results).encode()
        key = f"{folder}SUCCEEDED_0.json"
        s3.put_object(Bucket=bucket, Key=key, Body=body)
        files.append({"Key": key, "Size": len(body)})
    manifest = {
        "DestinationBucket": bucket,
        "MapRunArn": map_run_arn,
        "ResultFiles": {"FAILED": [], "PENDING": [], "SUCCEEDED": files},
    }
    key = f"{folder}manifest.json"
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(manifest).encode())
    return key


def count_shards(
    s3: Any, bucket: str, count_shard: Callable[[Any, Any], Any], plan: dict, round_: dict
) -> dict[str, str]:
    """What the CountShards Map leaves in ``$.counts``: each line of the round's shard list
    checked by the ``count_shard`` handler, the answers written as the result writer does."""
    body = s3.get_object(Bucket=bucket, Key=round_["shards_key"])["Body"].read()
    outputs = [
        count_shard(
            {
                "shard": json.loads(line),
                "job_output": plan["job_output"],
                "shards_prefix": plan["shards_prefix"],
                "settings": plan["settings"],
            },
            None,
        )
        for line in body.splitlines()
        if line.strip()
    ]
    run = f"arn:aws:states:eu-west-1:123456789012:mapRun:runs/CountShards:{uuid.uuid4()}"
    return {"manifest": write_map_results(s3, bucket, MAP_RESULTS_PREFIX, run, outputs)}
