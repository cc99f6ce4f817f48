"""The permission audit of one offline stack: record the calls each runtime makes, then
say for each whether the synthesized template lets that runtime make it, and which
statements the calls used."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.support.permissions.needs import Keys, Need, describe, needs
from tests.support.permissions.policies import Decision, Policies, Statement
from tests.support.permissions.recorder import Call, CallRecorder, acting_as

CLI = "cli"  # the runtime of the batchinfer CLI: a user with the stack's CLI policy


@dataclass(frozen=True)
class Denial:
    call: Call
    need: Need
    decision: Decision

    def __str__(self) -> str:
        return (
            f"{self.call.runtime}: {describe(self.call)} needs {self.need}: {self.decision.reason}"
        )


class Audit:
    """Records while entered (:meth:`recording`); runtimes are role logical ids, or
    :data:`CLI` for the CLI user's managed policy."""

    def __init__(
        self,
        template: dict[str, Any],
        render: Callable[[Any], Any],
        keys: Keys,
        recorder: CallRecorder,
        job_prefix: str,
    ) -> None:
        # Grants name the environment's job prefix; the report names it alike everywhere.
        self.job_prefix = job_prefix
        self.policies = Policies(template, render)
        self.keys = keys
        self.recorder = recorder
        resources = template["Resources"]
        roles = [k for k, v in resources.items() if v["Type"] == "AWS::IAM::Role"]
        self.role_arns = {rid: render({"Fn::GetAtt": [rid, "Arn"]}) for rid in roles}
        self._role_ids = {arn: rid for rid, arn in self.role_arns.items()}
        cli = [
            k for k, v in resources.items() if v["Type"] == "AWS::IAM::ManagedPolicy" and "Cli" in k
        ]
        self.cli_policy = cli[0] if cli else None

    def runtime_of(self, role_arn: str) -> str:
        return self._role_ids[role_arn]

    def as_role(self, role_arn: str | None) -> Any:
        """Calls in this block are made by the role ``role_arn`` (a job, a function); None:
        by the harness itself (looking things up, playing a person), not recorded."""
        return acting_as(self._role_ids[role_arn] if role_arn else None)

    @contextmanager
    def as_cli(self) -> Iterator[None]:
        with acting_as(CLI):
            yield

    def record(self, role_arn: str, service: str, operation: str, params: dict[str, Any]) -> None:
        """A call the harness makes for a role outside botocore (the state machine's)."""
        self.recorder.record(self._role_ids[role_arn], service, operation, params)

    def decisions(self) -> Iterator[tuple[Call, Need, Decision]]:
        keys = self.keys.remembered()
        for call in self.recorder.calls:
            owner = self.cli_policy if call.runtime == CLI else call.runtime
            if owner is None:
                raise AssertionError("the template has no CLI policy to check CLI calls against")
            role_arn = self.role_arns.get(call.runtime, "")
            for need in needs(call, keys):
                yield call, need, self.policies.decide(owner, role_arn, need)

    def denied(self) -> list[Denial]:
        return [Denial(c, n, d) for c, n, d in self.decisions() if not d.allowed]

    def grants(self, runtimes: set[str]) -> dict[str, set[str]]:
        """For each grant of ``runtimes`` (``<policy>[<sid>] <action> on <resource>``), whether
        a recorded call used it: ``{"granted": ..., "used": ...}``."""
        granted, used = set(), set()
        for owner in runtimes:
            for statement in self.policies.identity.get(owner, []):
                if statement.effect == "Allow":
                    granted |= {self._line(statement, g) for g in statement.grants()}
        for _, need, decision in self.decisions():
            if decision.allowed and decision.by is not None and decision.by.owner in runtimes:
                used |= {self._line(decision.by, g) for g in decision.by.grants_used_by(need)}
        return {"granted": granted, "used": used}

    def _line(self, statement: Statement, grant: tuple[str, str]) -> str:
        resource = grant[1].replace(f"/{self.job_prefix}-", "/<job_prefix>-")
        return f"{statement.label} {grant[0]} on {resource}"
