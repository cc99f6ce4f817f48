"""ReleaseSplitInstance: return a split job's instance to the stack's budget once the job
has ended, completed or failed (the split Map's item runs it on its failure path too, and
the failure recorder returns what a stopped Map left); releasing what is no longer held
does nothing."""

from typing import Any

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.storage.instance_leases import InstanceLeases, split_key
from batchinfer.pipeline.storage.status_table import StatusTable


def release_split_instance(
    job: dict[str, Any], object_uri: str, *, env: PipelineEnvironment, table: StatusTable
) -> bool:
    """Release the lease of the split job of ``object_uri``; False when it held none."""
    key = split_key(job["run_id"], object_uri)
    return InstanceLeases(table.table).release(env.split_instance_type, key)
