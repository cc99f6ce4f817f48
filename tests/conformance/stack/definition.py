"""The state machine definitions of a synthesized template, as JSON, with each reference
replaced by a value of the right shape (an ARN for ``Fn::GetAtt ...Arn``, a name for a
``Ref``), so validators that check ARNs see realistic ones."""

import json
import re
from typing import Any

PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012"}
# Resource type -> (ARN service, ARN resource part)
ARN_SHAPES = {
    "AWS::Lambda::Function": ("lambda", "function:{name}"),
    "AWS::SNS::Topic": ("sns", "{name}"),
    "AWS::DynamoDB::Table": ("dynamodb", "table/{name}"),
    "AWS::IAM::Role": ("iam", "role/{name}"),
    "AWS::KMS::Key": ("kms", "key/{name}"),
    "AWS::Events::EventBus": ("events", "event-bus/{name}"),
    "AWS::StepFunctions::StateMachine": ("states", "stateMachine:{name}"),
}


def render(value: Any, resources: dict[str, Any]) -> str:
    """A ``Fn::Join`` / ``Ref`` / ``Fn::GetAtt`` value as text."""
    if isinstance(value, str):
        return value
    ((function, argument),) = value.items()
    if function == "Fn::Join":
        return argument[0].join(render(part, resources) for part in argument[1])
    if function == "Ref":
        return PSEUDO.get(argument) or argument.lower()
    if function == "Fn::GetAtt":
        logical_id, attribute = argument
        if attribute != "Arn":
            return f"{logical_id}-{attribute}".lower()
        kind = resources[logical_id]["Type"]
        if kind == "AWS::S3::Bucket":
            return f"arn:aws:s3:::{logical_id.lower()}"
        service, resource = ARN_SHAPES[kind]
        region = "" if service == "iam" else PSEUDO["AWS::Region"]
        return f"arn:aws:{service}:{region}:{PSEUDO['AWS::AccountId']}:" + resource.format(
            name=logical_id
        )
    if function == "Fn::Sub" and isinstance(argument, str):  # a built image's URI
        return re.sub(
            r"\$\{([^}]+)\}", lambda m: PSEUDO.get(m[1], "amazonaws.com").lower(), argument
        )
    raise ValueError(f"unexpected intrinsic in a definition: {function}")


def definitions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Logical id -> parsed definition of every state machine in ``template``."""
    resources = template["Resources"]
    return {
        logical_id: json.loads(render(resource["Properties"]["DefinitionString"], resources))
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
    }


def all_states(states: dict[str, Any]) -> dict[str, Any]:
    """Every state, including those inside Parallel branches and Map processors."""
    found = {}
    for name, state in states.items():
        found[name] = state
        for branch in state.get("Branches", []):
            found |= all_states(branch["States"])
        for key in ("ItemProcessor", "Iterator"):
            if key in state:
                found |= all_states(state[key]["States"])
    return found
