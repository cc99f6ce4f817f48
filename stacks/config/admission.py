"""``admission``: the instance budget of the stack's runs and how a run waits for it."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from batchinfer.errors import ValidationError
from batchinfer.instances.supported import accepted, nearest
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from stacks.config.checks import int_range, known_keys, require
from stacks.execution_history import HISTORY_LIMIT, history_allowance, longest_history

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig


@dataclass(frozen=True)
class AdmissionConfig:
    """How many instances of each type the stack's runs may hold at once, and how a run
    waits for them. SageMaker's per-account quota is "<type> for transform job usage" (and
    "... for processing job usage"), per region, in Service Quotas; new accounts often
    have 0 for most types, so the default budget is small (docs/scaling.md)."""

    instance_budget: Mapping[str, int] = field(default_factory=dict)
    # For types not in instance_budget.
    default_budget: int = PipelineEnvironment.default_instance_budget
    # The Wait between two tries of a waiting run.
    poll_seconds: int = PipelineEnvironment.admission_poll_seconds
    # A run waiting longer for one job fails (InstancesUnavailable).
    max_wait_minutes: int = PipelineEnvironment.admission_max_wait_seconds // 60


def parse_admission(raw: Any, where: str) -> AdmissionConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object")
    values = known_keys(raw, AdmissionConfig, where)
    budget = values.get("instance_budget", {})
    if not isinstance(budget, Mapping):
        raise ValidationError(f"{where}.instance_budget: expected an object")
    return AdmissionConfig(**values)


def check_admission(config: "PipelineConfig", where: str) -> None:
    """Budgets of known instance types; a Wait loop whose longest run stays inside the
    execution history (stacks/execution_history.py)."""
    admission = config.admission
    known = set(accepted("transform")) | set(accepted("processing"))
    for instance_type, budget in admission.instance_budget.items():
        require(
            instance_type in known,
            f"{where}.instance_budget",
            instance_type,
            f"SageMaker job instance types, e.g. {', '.join(nearest(instance_type, known))}",
        )
        int_range(budget, 1, 10_000, f"{where}.instance_budget.{instance_type}")
    int_range(admission.default_budget, 1, 10_000, f"{where}.default_budget")
    settings = config.settings
    budget = admission.instance_budget.get(settings.instance_type, admission.default_budget)
    require(
        settings.instance_count <= budget,
        f"{where}.instance_budget",
        dict(admission.instance_budget),
        f"a budget of at least {settings.instance_count} {settings.instance_type} (the "
        f"default transform.instance_count of a run), or no run could ever start",
    )
    int_range(admission.poll_seconds, 1, 3600, f"{where}.poll_seconds")
    int_range(admission.max_wait_minutes, 1, 7 * 24 * 60, f"{where}.max_wait_minutes")
    events = longest_history(
        max_rounds=config.max_rounds,
        retry_attempts=config.retry.max_attempts,
        max_wait_seconds=admission.max_wait_minutes * 60,
        poll_seconds=admission.poll_seconds,
    )
    allowed = history_allowance()
    require(
        events <= allowed,
        f"{where}.poll_seconds",
        admission.poll_seconds,
        f"a wait of {admission.max_wait_minutes} minutes at this interval over "
        f"{config.max_rounds} rounds can write {events:,} history events, more than the "
        f"{allowed:,} allowed of a Standard execution's {HISTORY_LIMIT:,}; poll less often, "
        "or lower max_wait_minutes or max_rounds",
    )
