"""The synthesized template's IAM, evaluated as AWS does for one account: a runtime's
identity policies (inline, attached and managed) allow a need when an Allow statement
matches its action, resource and conditions and no Deny does; a bucket policy's Deny
(the TLS-only rule) and a key policy that does not let the account's IAM policies decide
refuse it. Wildcards are IAM's: ``*`` and ``?``, actions without regard to case."""

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from stacks.nag import flatten
from tests.support.aws import ACCOUNT, REGION
from tests.support.permissions.needs import Need

# The context every call carries: HTTPS, this account.
GLOBAL_CONTEXT = {"aws:SecureTransport": "true", "kms:CallerAccount": ACCOUNT}


@dataclass(frozen=True)
class Statement:
    """One statement of one policy, rendered, and where it came from."""

    owner: str  # the runtime (role logical id) or the managed policy it belongs to
    policy: str  # the policy's logical id
    number: int  # its position in the policy
    sid: str
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: tuple[tuple[str, str, tuple[str, ...]], ...]  # (operator, key, values)
    principals: tuple[str, ...] = ()  # resource policies only
    shown: tuple[str, ...] = ()  # the resources as the template writes them

    @property
    def label(self) -> str:
        return f"{self.policy}[{self.sid or self.number}]"

    def grants(self) -> list[tuple[str, str]]:
        """Each (action, resource) pair it allows, resources as the template writes them."""
        return [(a, r) for a in self.actions for r in self.shown]

    def grants_used_by(self, need: Need) -> list[tuple[str, str]]:
        return [
            (a, shown)
            for a in self.actions
            if _wildcard(a, need.action, case=False)
            for r, shown in zip(self.resources, self.shown, strict=True)
            if _wildcard(r, need.resource, case=True)
        ]

    def matches(self, need: Need) -> bool:
        return (
            any(_wildcard(a, need.action, case=False) for a in self.actions)
            and any(_wildcard(r, need.resource, case=True) for r in self.resources)
            and all(_condition(op, key, values, need) for op, key, values in self.conditions)
        )


@dataclass(frozen=True)
class Decision:
    allowed: bool
    by: Statement | None
    reason: str


class Policies:
    """The template's policies by runtime, and its buckets' and keys' resource policies."""

    def __init__(self, template: dict[str, Any], render: Callable[[Any], Any]) -> None:
        resources = template["Resources"]
        self.identity: dict[str, list[Statement]] = {}
        self.buckets: dict[str, list[Statement]] = {}  # bucket name -> statements
        self.keys: dict[str, list[Statement]] = {}  # key ARN -> statements
        for logical_id, resource in resources.items():
            kind, props = resource["Type"], resource.get("Properties", {})
            if kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                owners = [r["Ref"] for r in props.get("Roles", []) if "Ref" in r] or [logical_id]
                for owner in owners:
                    self.identity.setdefault(owner, []).extend(
                        _statements(owner, logical_id, props["PolicyDocument"], render)
                    )
            elif kind == "AWS::IAM::Role":
                for inline in props.get("Policies", []):
                    self.identity.setdefault(logical_id, []).extend(
                        _statements(
                            logical_id, inline["PolicyName"], inline["PolicyDocument"], render
                        )
                    )
            elif kind == "AWS::S3::BucketPolicy":
                bucket = render(props["Bucket"])
                self.buckets[bucket] = _statements(
                    bucket, logical_id, props["PolicyDocument"], render
                )
            elif kind == "AWS::KMS::Key":
                arn = render({"Fn::GetAtt": [logical_id, "Arn"]})
                self.keys[arn] = _statements(arn, logical_id, props["KeyPolicy"], render)

    def runtimes(self) -> list[str]:
        return sorted(self.identity)

    def decide(self, runtime: str, role_arn: str, need: Need) -> Decision:
        statements = self.identity.get(runtime, [])
        denied = next((s for s in statements if s.effect == "Deny" and s.matches(need)), None)
        if denied:
            return Decision(False, denied, f"denied by {denied.label}")
        bucket = _bucket_of(need.resource)
        for statement in self.buckets.get(bucket, []) if bucket else []:
            if (
                statement.effect == "Deny"
                and statement.matches(need)
                and _names(statement, role_arn)
            ):
                return Decision(False, statement, f"denied by the bucket policy {statement.label}")
        key_policy = self.keys.get(need.resource)
        if key_policy is not None and need.action.startswith("kms:"):
            direct = next(
                (
                    s
                    for s in key_policy
                    if s.effect == "Allow" and s.matches(need) and _names(s, role_arn, root=False)
                ),
                None,
            )
            if direct:
                return Decision(True, direct, f"allowed by the key policy {direct.label}")
            if not any(
                s.effect == "Allow" and s.matches(need) and _names(s, role_arn) for s in key_policy
            ):
                return Decision(
                    False, None, "the key policy neither allows the role nor lets IAM decide"
                )
        allowed = next((s for s in statements if s.effect == "Allow" and s.matches(need)), None)
        if allowed is None:
            return Decision(False, None, f"no statement of {runtime} allows {need.action}")
        return Decision(True, allowed, f"allowed by {allowed.label}")


def _statements(
    owner: str, policy: str, template_document: dict[str, Any], render: Callable[[Any], Any]
) -> list[Statement]:
    found = []
    document = render(template_document)
    for number, raw in enumerate(document["Statement"]):
        written = template_document["Statement"][number].get("Resource", "*")
        if "NotAction" in raw or "NotResource" in raw:
            raise ValueError(f"{policy}[{number}]: NotAction/NotResource are not evaluated here")
        principal = raw.get("Principal", {})
        principals = (
            ("*",)
            if principal == "*"
            else tuple(v for vs in principal.values() for v in _tuple(vs))
        )
        found.append(
            Statement(
                owner=owner,
                policy=policy,
                number=number,
                sid=raw.get("Sid", ""),
                effect=raw["Effect"],
                actions=_tuple(raw["Action"]),
                resources=_tuple(raw.get("Resource", "*")),
                conditions=tuple(
                    (operator, key, _tuple(values))
                    for operator, tests in raw.get("Condition", {}).items()
                    for key, values in tests.items()
                ),
                principals=principals,
                shown=tuple(
                    _shown(r) for r in (written if isinstance(written, list) else [written])
                ),
            )
        )
    return found


# Pseudo parameters as the offline stack stands them in: with them resolved, the templates
# of an environment pinned to this account and of one that is not name grants alike.
_PSEUDO = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}


def _shown(value: Any) -> str:
    """A policy resource as the template writes it, pseudo parameters resolved."""
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref" and argument in _PSEUDO:
            return _PSEUDO[argument]
        if function == "Fn::Sub" and isinstance(argument, str):
            for name, text in _PSEUDO.items():
                argument = argument.replace("${" + name + "}", text)
            return argument
        if function == "Fn::Join":
            return flatten({function: [argument[0], [_shown_part(p) for p in argument[1]]]})
    return flatten(value)


def _shown_part(value: Any) -> Any:
    text = _shown(value)
    return text if not text.startswith("<") else value


def _tuple(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)


@cache
def _pattern(text: str, case: bool) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in text)
    return re.compile(body, 0 if case else re.IGNORECASE)


def _wildcard(pattern: str, value: str, *, case: bool) -> bool:
    return _pattern(pattern, case).fullmatch(value) is not None


def _condition(operator: str, key: str, values: tuple[str, ...], need: Need) -> bool:
    context = GLOBAL_CONTEXT | dict(need.context)
    base = operator.removeprefix("ForAnyValue:").removesuffix("IfExists")
    if key not in context:
        return operator.endswith("IfExists") or base.startswith(("StringNot", "ArnNot"))
    actual = context[key]
    if base in ("StringEquals", "ArnEquals", "Bool"):
        return actual in values if base != "Bool" else actual.lower() in (v.lower() for v in values)
    if base in ("StringLike", "ArnLike"):
        return any(_wildcard(v, actual, case=True) for v in values)
    if base == "StringNotEquals":
        return actual not in values
    if base == "StringNotLike":
        return not any(_wildcard(v, actual, case=True) for v in values)
    raise ValueError(f"condition operator {operator} is not evaluated here")


def _bucket_of(resource: str) -> str | None:
    if not resource.startswith("arn:aws:s3:::"):
        return None
    return resource.removeprefix("arn:aws:s3:::").split("/", 1)[0]


def _names(statement: Statement, role_arn: str, *, root: bool = True) -> bool:
    """Whether a resource policy's statement applies to ``role_arn`` (``root``: also
    through the account, which hands the decision to IAM policies)."""
    account = f"arn:aws:iam::{ACCOUNT}:root"
    return any(
        p in ("*", role_arn) or (root and p in (account, ACCOUNT)) for p in statement.principals
    )
