"""MergeObject: one item of the MergeOutputs Map, the shard outputs of one input object
merged in order into its one output (R12: each input object gives one output named after
it), ``<name>.out`` in the output prefix, by one multipart upload
(:func:`batchinfer.pipeline.storage.merge.merge_objects`; Parquet answers are joined into
one Parquet file, their row groups under one footer: ``merge_parquet``).

The upload is completed only when every part is in, so the output appears whole or not at
all; run again after it ran (its answer lost, or its invocation died or timed out after
the upload completed), it merges the same parts into the same key: the same bytes, one
object.
"""

from typing import Any

from batchinfer.pipeline.contract.state import MergeTask
from batchinfer.pipeline.storage.merge import merge_objects, merge_parquet
from batchinfer.pipeline.storage.shard_indexes import input_name, shard_names, split_index
from batchinfer.transform.assemble import output_name
from batchinfer.uris import parse_s3_uri


def merge_object(task: MergeTask, *, s3: Any) -> dict[str, Any]:
    """Merge the outputs of ``task.input``'s shards; its output and how many were merged."""
    plan = task.plan
    index = split_index(s3, task.input, task.folder)
    parts = parse_s3_uri(plan.job_output)
    names = shard_names(index.names, task.folder, plan.shards_prefix)
    target = parse_s3_uri(plan.output).child(output_name(input_name(plan.input, task.input)))
    merge = merge_parquet if plan.settings.answers_parquet else merge_objects
    merge(s3, [parts.child(output_name(name)) for name in names], target)
    return {"output": target.uri, "shards": len(names)}
