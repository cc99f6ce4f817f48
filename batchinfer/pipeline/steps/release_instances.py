"""ReleaseInstances: return the instances of the run's job to the stack's budget once the
job has ended (completed or Failed). The failure recorder releases them when the run fails
instead; releasing what is no longer held does nothing."""

from batchinfer.pipeline.contract.state import RunPlan
from batchinfer.pipeline.storage.instance_leases import InstanceLeases
from batchinfer.pipeline.storage.status_table import StatusTable


def release_instances(plan: RunPlan, *, table: StatusTable) -> bool:
    """Release the run's lease; False when it held none (released already)."""
    return InstanceLeases(table.table).release(plan.settings.instance_type, plan.run_id)
