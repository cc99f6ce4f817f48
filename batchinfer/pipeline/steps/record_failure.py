"""The failure recorder: close a run with the cause and the failing job, return the
instances its job and its split jobs leased to the budget and delete its model, then name
its first failed shards (from a bounded read of its SHARD items) and announce it once.
Called by the state machine's Catch path and, for executions that ended without it (timed
out, aborted, or failed with an error no Catch can take), by an EventBridge rule.

How the run ends: REJECTED when the request failed before Plan accepted it (the run id is
not taken), ABORTED when a job or the execution was stopped on purpose, FAILED otherwise.
"""

import json
from dataclasses import replace
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.run_errors import JobStopped
from batchinfer.pipeline.contract.state import Failure, JobOutcome, RunEnd, RunPlan
from batchinfer.pipeline.jobs.run_model import delete_run_model
from batchinfer.pipeline.jobs.run_request import run_id_of
from batchinfer.pipeline.storage.instance_leases import InstanceLeases, split_prefix
from batchinfer.pipeline.storage.notify import announce
from batchinfer.pipeline.storage.status_table import (
    ABORTED,
    FAILED,
    INSTANCE_LEASE,
    MISSING,
    RECORDING_FAILURE,
    REJECTED,
    STATUS_INDEX_PARTITION,
    NotRunOwner,
    StatusTable,
    now,
)

CAUSE_LIMIT = 4000
SHOWN_SHARDS = 20
# The most SHARD items read to name failed shards, and per Query: a run of any size is
# recorded within the Lambda's memory and time.
SHARDS_READ = 5_000
SHARDS_PAGE = 1_000


def record_failure(
    state: dict[str, Any],
    *,
    execution: str,
    execution_name: str,
    env: PipelineEnvironment,
    table: StatusTable,
    events: Any,
    sns: Any,
    sagemaker: Any,
) -> Failure:
    """Record the failure in ``state["error"]``; return the error and cause of the
    execution's Fail state. ``state`` is the whole state at the failure: it has a plan
    unless Plan failed."""
    outcome = JobOutcome.from_state(state.get("error") or {})
    plan = RunPlan.from_state(state["plan"]) if isinstance(state.get("plan"), dict) else None
    run_id = plan.run_id if plan else _run_id(state, execution_name)
    failed_job = outcome.name or JobOutcome.from_state(state.get("job")).name
    error = outcome.error or "RunFailed"
    stopped = error == JobStopped.__name__
    status = REJECTED if plan is None else ABORTED if stopped else FAILED
    return _record(
        run_id,
        status=status,
        error=error,
        cause=_message(outcome.reason),
        failed_job=failed_job,
        output=plan.output if plan else None,
        execution=execution,
        create=plan is None,
        env=env,
        table=table,
        events=events,
        sns=sns,
        sagemaker=sagemaker,
    )


def record_ended_execution(
    event: dict[str, Any],
    *,
    env: PipelineEnvironment,
    table: StatusTable,
    events: Any,
    sns: Any,
    sagemaker: Any,
) -> Failure | None:
    """Handle a "Step Functions Execution Status Change" event (FAILED, TIMED_OUT or
    ABORTED): close the run if it is still RUNNING."""
    detail = event["detail"]
    try:
        request = json.loads(detail.get("input") or "{}")
    except ValueError:
        request = {}
    try:
        run_id = run_id_of(request if isinstance(request, dict) else {}, detail["name"])
    except ValidationError:
        return None  # Plan rejected this run id: there is no run to mark
    status = detail["status"]
    ended = f"the execution {status.lower().replace('_', ' ')} before the run finished"
    try:
        return _record(
            run_id,
            status=ABORTED if status == "ABORTED" else FAILED,  # a stopped execution
            error=detail.get("error") or f"Execution{status.title().replace('_', '')}",
            cause=f"{ended}: {detail['cause']}" if detail.get("cause") else ended,
            failed_job=None,
            output=None,
            execution=detail["executionArn"],
            create=False,
            only_if_running=True,
            env=env,
            table=table,
            events=events,
            sns=sns,
            sagemaker=sagemaker,
        )
    except NotRunOwner:
        return None  # the run finished, never started, or is another execution's


def _record(
    run_id: str,
    *,
    status: str,
    error: str,
    cause: str,
    failed_job: str | None,
    output: str | None,
    execution: str,
    create: bool,
    env: PipelineEnvironment,
    table: StatusTable,
    events: Any,
    sns: Any,
    sagemaker: Any,
    only_if_running: bool = False,
) -> Failure:
    """Close the run, return its lease, delete its model, then name its failed shards and
    announce it: what matters most is done before any SHARD item is read. Each action may
    run again (a retried step): a release or deletion done already is a no-op, and the
    announcement is claimed once."""
    run = RunEnd(
        run_id=run_id,
        status=status,
        output=output,
        execution=execution,
        error=error,
        cause=cause[:CAUSE_LIMIT],
        failed_job=failed_job,
    )
    attributes = {"run_status": status, "finished_at": now(), RECORDING_FAILURE: now()} | {
        key: value
        for key, value in run.to_state().items()
        if key in ("error", "cause", "failed_job") and value
    }
    try:
        table.update_run(
            run_id, execution, attributes, create=create, only_if_running=only_if_running
        )
        item = table.get_run(run_id) or {}
    except NotRunOwner:
        if not only_if_running:
            # Another execution owns this run id: leave its record and its subscribers alone.
            return Failure(error, f"run {run_id} (not this execution's): {cause}")
        item = table.get_run(run_id) or {}
        if item.get("execution_arn") != execution or RECORDING_FAILURE not in item:
            raise
        # An earlier recording closed the run and stopped before it announced: finish it
        # with the end it recorded.
        run = replace(
            run,
            output=item.get("output"),
            status=item[STATUS_INDEX_PARTITION],
            error=item.get("error"),
            cause=item.get("cause"),
            failed_job=item.get("failed_job"),
        )
    if item.get(INSTANCE_LEASE):
        # The job's instances go back to the budget (ReleaseInstances did not run).
        InstanceLeases(table.table).release(item[INSTANCE_LEASE], run_id)
    if env.split_instance_type:
        # So do those of split jobs the failed split Map stopped before they released them.
        InstanceLeases(table.table).release_all(env.split_instance_type, split_prefix(run_id))
    if item.get("run_model"):
        delete_run_model(item["run_model"], sagemaker)
    run = _with_failed_shards(run, execution, table)
    announce(run, env=env, events=events, sns=sns, table=table)
    table.remove_run_attribute(run_id, execution, RECORDING_FAILURE)
    return Failure(run.error or error, f"run {run_id}: {run.cause or cause}"[:CAUSE_LIMIT])


def _with_failed_shards(run: RunEnd, execution: str, table: StatusTable) -> RunEnd:
    """``run`` naming its first failed (MISSING) shards, recorded on the RUN item too. At
    most SHARDS_READ SHARD items are read, whatever the run's size; ``failed_shards_cut``
    says when more may have failed than are named."""
    found, cut = table.shards_with_status(
        run.run_id, MISSING, most=SHOWN_SHARDS, read=SHARDS_READ, page=SHARDS_PAGE
    )
    names = [item.get("name", str(item["shard"])) for item in sorted(found, key=_number)]
    run = replace(run, failed_shards=names or None, failed_shards_cut=cut or None)
    recorded = {
        key: value
        for key, value in run.to_state().items()
        if key in ("failed_shards", "failed_shards_cut")
    }
    if recorded:
        table.update_run(run.run_id, execution, recorded)
    return run


def _number(item: dict[str, Any]) -> int:
    return int(item["shard"])


def _run_id(state: dict[str, Any], execution_name: str) -> str:
    """The run id of a run that failed before Plan finished (the request may be bad)."""
    try:
        return run_id_of(state, execution_name)
    except ValidationError:
        return execution_name


def _message(reason: str | None) -> str:
    """A Lambda error's Cause is ``{"errorMessage": ...}``; other causes are kept."""
    if not reason:
        return "no cause was recorded"
    try:
        value = json.loads(reason)
    except ValueError:
        return reason
    if isinstance(value, dict) and "errorMessage" in value:
        return str(value["errorMessage"])
    return reason
