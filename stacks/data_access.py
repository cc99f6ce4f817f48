"""Grants on the existing buckets an environment names: its data sources (read) and output
destinations (write, and read back), each with the customer managed key it encrypts with.

The grants are identity policies on the stack's roles; a key's own policy must let the
account's IAM policies use it, and a bucket in another account must grant the roles too.
"""

from collections.abc import Iterable

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from batchinfer.pipeline.contract.data_places import DataPlace
from stacks.nag import resource_finding

WRITE_ACTIONS = ["s3:PutObject", "s3:AbortMultipartUpload"]
# SSE-KMS: reading decrypts; writing asks for a data key (and a multipart upload decrypts
# it again to complete); SageMaker asks the job's role for kms:Encrypt on a job's KmsKeyId.
READ_KEY_ACTIONS = ["kms:Decrypt"]
WRITE_KEY_ACTIONS = ["kms:Decrypt", "kms:GenerateDataKey"]
JOB_OUTPUT_KEY_ACTIONS = [*WRITE_KEY_ACTIONS, "kms:Encrypt"]


def grant_list(role: iam.IRole, places: Iterable[DataPlace], sid: str) -> None:
    """Let ``role`` list the keys under ``places`` (one bucket each: no wildcard to
    acknowledge)."""
    partition = Stack.of(role).partition
    for number, place in enumerate(places):
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid=f"{sid}{number}",
                actions=["s3:ListBucket"],
                resources=[f"arn:{partition}:s3:::{place.bucket}"],
                conditions={"StringLike": {"s3:prefix": [f"{place.prefix}*"]}}
                if place.prefix
                else None,
            )
        )


def grant_read(
    role: iam.IRole, places: Iterable[DataPlace], sid: str, *, versions: bool = False
) -> list[str]:
    """Let ``role`` read objects under ``places`` (also by version); the cdk-nag findings."""
    actions = ["s3:GetObject", *(["s3:GetObjectVersion"] if versions else [])]
    return _grant(role, tuple(places), sid, actions, READ_KEY_ACTIONS)


def grant_write(
    role: iam.IRole,
    places: Iterable[DataPlace],
    sid: str,
    *,
    key_actions: list[str] = WRITE_KEY_ACTIONS,
) -> list[str]:
    """Let ``role`` write objects under ``places``; the cdk-nag findings that leaves."""
    return _grant(role, tuple(places), sid, WRITE_ACTIONS, key_actions)


def _grant(
    role: iam.IRole,
    places: tuple[DataPlace, ...],
    sid: str,
    actions: list[str],
    key_actions: list[str],
) -> list[str]:
    if not places:
        return []
    partition = Stack.of(role).partition
    objects = [f"arn:{partition}:s3:::{p.bucket}/{p.prefix}*" for p in places]
    role.add_to_principal_policy(
        iam.PolicyStatement(sid=sid, actions=actions, resources=sorted(set(objects)))
    )
    keys = sorted({p.kms_key_arn for p in places if p.kms_key_arn})
    if keys:
        role.add_to_principal_policy(
            iam.PolicyStatement(sid=f"{sid}Keys", actions=key_actions, resources=keys)
        )
    return [resource_finding(role, arn) for arn in objects]
