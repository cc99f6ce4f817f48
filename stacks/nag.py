"""cdk-nag acknowledgments: each names the exact rule or finding and says why it is safe."""

import json
from collections.abc import Iterable
from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct


def acknowledge(
    construct: IConstruct, rule: str, reason: str, findings: Iterable[str] = ()
) -> None:
    """Acknowledge ``rule`` on ``construct`` and its children, or only the given findings of
    it (the text in ``AwsSolutions-IAM5[...]``) when ``findings`` are given."""
    ids = [f"{rule}[{finding}]" for finding in findings] or [rule]
    for rule_id in ids:
        Validations.of(construct).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def resource_finding(scope: IConstruct, value: str) -> str:
    """``Resource::<text>``: how cdk-nag names a policy resource, ``value`` a string that may
    hold tokens (references become ``<LogicalId>``/``<LogicalId.Attr>``)."""
    return f"Resource::{flatten(Stack.of(scope).resolve(value))}"


def flatten(value: Any) -> str:
    """A template value as one string, references as ``<LogicalId>``/``<LogicalId.Attr>``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Fn::Join" and argument[0] == "":
            return "".join(flatten(part) for part in argument[1])
        if function == "Ref":
            return f"<{argument}>"
        if function == "Fn::GetAtt":
            return f"<{argument[0]}.{argument[1]}>"
    return json.dumps(value, separators=(",", ":"))
