"""AcquireSplitInstance: lease the one instance of a split job (the split Map's item for a
large object) before the job is created, from the budget of the split jobs' instance type,
which the runs' jobs share (:mod:`batchinfer.pipeline.storage.instance_leases`), under the
object's own key (:func:`split_key`). One without room is queued and polls again after the
state machine's Wait, first come, first served with the runs; past
``admission_max_wait_seconds`` of waiting (its place in the queue says since when) it fails
with :class:`InstancesUnavailable`. It marks nothing on the RUN item, which the Map's other
items share."""

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.run_errors import InstancesUnavailable
from batchinfer.pipeline.contract.state import Admission
from batchinfer.pipeline.storage.instance_leases import InstanceLeases, split_key
from batchinfer.pipeline.storage.status_table import StatusTable


def acquire_split_instance(
    job: dict[str, Any],
    object_uri: str,
    *,
    execution: str,
    env: PipelineEnvironment,
    table: StatusTable,
    clock: Callable[[], float] = time.time,
) -> Admission:
    """Lease the instance of the split job of ``object_uri`` (``job``: the split task's
    ``job``, with its ``run_id``), or say it waits."""
    instance_type, run_id = env.split_instance_type, job["run_id"]
    budget = env.budget_for(instance_type)
    leases = InstanceLeases(table.table, clock)
    key = split_key(run_id, object_uri)
    grant = leases.acquire(
        instance_type,
        key,
        1,
        budget,
        execution=execution,
        round_number=0,
        lease_seconds=env.lease_seconds,
        wait_seconds=env.queue_seconds,
    )
    if grant.granted:
        return Admission(True, instance_type, 1, grant.in_use, budget)
    since_ms = grant.since_ms if grant.since_ms is not None else int(clock() * 1000)
    waited = int(clock() - since_ms / 1000)
    if waited > env.admission_max_wait_seconds:
        leases.release(instance_type, key)  # its place goes to those behind it
        raise InstancesUnavailable(
            f"run {run_id}: the split job of {object_uri} waited {waited} s for 1 x "
            f"{instance_type}, longer than admission.max_wait_minutes allows "
            f"({env.admission_max_wait_seconds} s); when it last asked, {grant.in_use} of the "
            f"budget of {budget} were leased and {grant.ahead} waiter(s) had asked before it"
        )
    since = datetime.fromtimestamp(since_ms / 1000, UTC).isoformat()
    return Admission(False, instance_type, 1, grant.in_use, budget, since)
