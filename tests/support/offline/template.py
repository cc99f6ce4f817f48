"""The synthesized CloudFormation template as the offline stack reads it: intrinsic
functions resolved to physical names and fake ARNs, and the Lambda functions it declares."""

from dataclasses import dataclass
from typing import Any

from tests.support.aws import ACCOUNT, REGION

__all__ = ["ACCOUNT", "REGION", "Function", "render"]


def render(value: Any, refs: dict[str, str], attributes: dict[tuple[str, str], str]) -> Any:
    """``value`` with ``Ref``, ``Fn::GetAtt``, ``Fn::Join``, ``Fn::Sub``, ``Fn::Select`` and
    ``Fn::Split`` resolved."""
    if isinstance(value, list):
        return [render(v, refs, attributes) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return refs[argument]
        if function == "Fn::GetAtt":
            return attributes[tuple(argument)]
        if function == "Fn::Join":
            return argument[0].join(render(part, refs, attributes) for part in argument[1])
        if function == "Fn::Select":
            return render(argument[1], refs, attributes)[int(argument[0])]
        if function == "Fn::Split":
            return render(argument[1], refs, attributes).split(argument[0])
        if function == "Fn::Sub":
            text = argument
            for name, physical in refs.items():
                text = text.replace("${" + name + "}", physical)
            return text
    return {k: render(v, refs, attributes) for k, v in value.items()}


@dataclass(frozen=True)
class Function:
    """A Lambda function of the template: its handler module, environment and role."""

    arn: str
    handler: str
    environment: dict[str, str]
    role: str  # the execution role's ARN
    timeout_seconds: int = 3  # Lambda's default
