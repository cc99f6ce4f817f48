"""``vpc``: the private subnets and security groups of the jobs, the model and the Lambdas."""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from batchinfer.errors import ValidationError
from stacks.config.checks import as_list, known_keys, require

_SUBNET = re.compile(r"subnet-[0-9a-f]{8,17}")
_SECURITY_GROUP = re.compile(r"sg-[0-9a-f]{8,17}")


@dataclass(frozen=True)
class VpcConfig:
    """Private subnets and security groups for the jobs, the model and the Lambdas (for
    accounts that require VPC-only SageMaker). The subnets need the VPC endpoints the
    deploy page (docs/deploy.md) lists."""

    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...]


def parse_vpc(raw: Any, where: str) -> VpcConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object with subnet_ids and security_group_ids")
    values = known_keys(raw, VpcConfig, where)
    for key, pattern, example in (
        ("subnet_ids", _SUBNET, "subnet-0123456789abcdef0"),
        ("security_group_ids", _SECURITY_GROUP, "sg-0123456789abcdef0"),
    ):
        ids = as_list(values.get(key, []), f"{where}.{key}")
        require(
            ids and all(isinstance(i, str) and pattern.fullmatch(i) for i in ids),
            f"{where}.{key}",
            ids,
            f"a non-empty list of ids such as {example}",
        )
        values[key] = tuple(ids)
    return VpcConfig(**values)
