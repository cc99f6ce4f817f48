"""AcquireInstances: lease the instances of the run's next job from the stack's budget
(:mod:`batchinfer.pipeline.storage.instance_leases`) before the job is created, first come, first
served. A run the budget has no room for, or that other runs wait ahead of, is queued,
marked waiting on its RUN item and polls again after the state machine's Wait; past
``admission_max_wait_seconds`` of waiting it fails with :class:`InstancesUnavailable`. An
endpoint run starts no job, so it takes no instances."""

import time
from collections.abc import Callable
from datetime import datetime

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.run_errors import InstancesUnavailable
from batchinfer.pipeline.contract.state import Admission, Round, RunPlan
from batchinfer.pipeline.storage.instance_leases import InstanceLeases
from batchinfer.pipeline.storage.status_table import StatusTable


def acquire_instances(
    plan: RunPlan,
    round_: Round,
    *,
    execution: str,
    env: PipelineEnvironment,
    table: StatusTable,
    clock: Callable[[], float] = time.time,
) -> Admission:
    """Lease ``instance_count`` instances of the run's ``instance_type``, or say it waits."""
    instance_type = plan.settings.instance_type
    count = plan.settings.instance_count
    if plan.engine == "endpoint":  # the endpoint's own instances score it
        return Admission(True, instance_type, 0, 0, env.budget_for(instance_type))
    budget = env.budget_for(instance_type)
    leases = InstanceLeases(table.table, clock)
    if count > budget:
        leases.release(instance_type, plan.run_id)  # its place, if a bigger budget queued it
        raise InstancesUnavailable(
            f"instance_count: run {plan.run_id} asks for {count} x {instance_type}, more than "
            f"the stack's budget of {budget} for that type (admission.instance_budget in "
            "cdk.json); ask for fewer instances or raise the budget"
        )
    grant = leases.acquire(
        instance_type,
        plan.run_id,
        count,
        budget,
        execution=execution,
        round_number=round_.number,
        lease_seconds=env.lease_seconds,
        wait_seconds=env.queue_seconds,
    )
    if grant.granted:
        table.mark_admitted(plan.run_id, execution, instance_type)
        return Admission(True, instance_type, count, grant.in_use, budget)
    since = table.mark_waiting(plan.run_id, execution, f"{count} x {instance_type}", instance_type)
    waited = int(clock() - datetime.fromisoformat(since).timestamp())
    allowed = env.admission_max_wait_seconds
    if waited > allowed:
        leases.release(instance_type, plan.run_id)  # its place goes to the runs behind it
        raise InstancesUnavailable(
            f"run {plan.run_id}: waited {waited} s (since {since}) for {count} x "
            f"{instance_type}, longer than admission.max_wait_minutes allows ({allowed} s); "
            f"when it last asked, other runs held {grant.in_use} of the budget of {budget} "
            f"and {grant.ahead} waiting run(s) had asked before it"
        )
    return Admission(False, instance_type, count, grant.in_use, budget, since)
