"""Start a run (a state machine execution) and read runs from the status table."""

import json
import re
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from batchinfer.cloud.aws_errors import aws_errors
from batchinfer.cloud.stack import DeployedStack
from batchinfer.errors import BatchInferError
from batchinfer.pipeline.storage.status_table import RUN_STATUSES, RUNNING, StatusTable

# The keys of ``--json`` output, always present (null when the item has no value yet).
RUN_KEYS = (
    "run_id",
    "run_status",
    "started_at",
    "finished_at",
    "execution_arn",
    "input",
    "output",
    "engine",
    "objects",
    "bytes",
    "rows",  # Parquet inputs: their rows, read by Plan from the footers
    "shards",
    "shards_done",
    "records_in",
    "records_out",
    "records_quarantined",
    "manifest",
    "error",
    "cause",
    "failed_job",
    "failed_shards",
    "failed_shards_cut",
    "settings",
    "estimate",
)
SHARD_KEYS = (
    "shard",
    "name",
    "status",
    "attempts",
    "input",
    "output",
    "job_name",
    "records_in",
    "records_out",
    "records_quarantined",
    "reason",
    "updated_at",
)

# Step Functions execution names: 1-80 characters, none of these.
_NAME_FORBIDDEN = re.compile(r"[\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]")


def new_run_id(now: datetime | None = None) -> str:
    """``run-20240501-020000-1a2b3c``: sortable by start time, unique enough to retry."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return f"run-{stamp}-{secrets.token_hex(3)}"


def start_run(stack: DeployedStack, request: dict[str, Any]) -> tuple[str, str]:
    """Start an execution for ``request`` named by its run id; (run id, execution ARN)."""
    run_id = request.get("run_id") or new_run_id()
    if not isinstance(run_id, str) or len(run_id) > 80 or _NAME_FORBIDDEN.search(run_id):
        raise BatchInferError(
            f"run_id: {run_id!r} cannot name an execution (1-80 characters, no spaces, "
            "slashes or punctuation such as : , ; # %)"
        )
    arn = stack.state_machine_arn
    with aws_errors(run_id=run_id):
        response = stack.session.client("stepfunctions").start_execution(
            stateMachineArn=arn, name=run_id, input=json.dumps(request)
        )
    return run_id, response["executionArn"]


def console_link(execution_arn: str) -> str:
    region = execution_arn.split(":")[3]
    return (
        f"https://{region}.console.aws.amazon.com/states/home?region={region}"
        f"#/v2/executions/details/{execution_arn}"
    )


def get_run(stack: DeployedStack, table: StatusTable, run_id: str) -> dict[str, Any]:
    run = table.get_run(run_id)
    if run is None:
        raise BatchInferError(
            f"run {run_id}: not in the status table {table.table.name} of stack {stack.name}"
        )
    return run


def list_runs(table: StatusTable, status: str | None, limit: int) -> list[dict[str, Any]]:
    """Runs with ``status`` (or any), newest first."""
    statuses = [status] if status else list(RUN_STATUSES)
    found = [run for s in statuses for run in table.runs(s, limit=limit)]
    found.sort(key=lambda run: run.get("started_at", ""), reverse=True)
    return found[:limit]


def watch_run(
    read: Callable[[], dict[str, Any]],
    show: Callable[[dict[str, Any]], None],
    interval: float,
    sleep: Callable[[float], None] | None = None,
) -> dict[str, Any]:
    """Show the run until it is no longer RUNNING; return its last state."""
    while True:
        run = read()
        show(run)
        if run.get("run_status") != RUNNING:
            return run
        (sleep or time.sleep)(interval)


def as_json(item: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """``item`` (a status-table item) with exactly ``keys``, as JSON values."""
    return {key: _plain(item.get(key)) for key in keys}


def _plain(value: Any) -> Any:
    """DynamoDB's numbers (Decimal) and sets as JSON numbers and lists."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: _plain(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(inner) for inner in value]
    if isinstance(value, set | frozenset):
        return sorted(_plain(inner) for inner in value)
    return value
