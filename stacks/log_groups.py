"""The stack's log groups: each encrypted with the stack's key and kept
``log_retention_days``, and the key policy statement that lets CloudWatch Logs use the key."""

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from stacks.config.retention import LOG_RETENTION_DAYS


def allow_log_encryption(key: kms.Key) -> None:
    """Let CloudWatch Logs encrypt and decrypt with ``key`` the log groups of the key's account
    and region, and nothing else: the statement of the CloudWatch Logs User Guide, "Encrypt
    log data in CloudWatch Logs using AWS Key Management Service" (step 2, the key policy),
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html,
    less its ``kms:Describe*``: a Describe request carries no encryption context, so under the
    statement's condition it could never be allowed. The condition names every log group of
    the account: naming each group would make the key depend on the groups that depend on
    it, and the Lambdas' groups have generated names."""
    stack = Stack.of(key)
    log_groups = stack.format_arn(
        service="logs",
        resource="log-group",
        resource_name="*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchLogsOfThisAccount",
            principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*"],
            resources=["*"],
            conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": log_groups}},
        )
    )


def encrypted_log_group(
    scope: Construct, id: str, *, key: kms.IKey, retention_days: int, name: str | None = None
) -> logs.LogGroup:
    """A log group of the stack: encrypted with ``key``, kept ``retention_days``."""
    return logs.LogGroup(
        scope,
        id,
        log_group_name=name,
        encryption_key=key,
        retention=retention(retention_days),
    )


def retention(days: int) -> logs.RetentionDays:
    """The ``RetentionDays`` member for ``days`` (one of :data:`LOG_RETENTION_DAYS`)."""
    members = [m for m in logs.RetentionDays if m is not logs.RetentionDays.INFINITE]
    return dict(zip(LOG_RETENTION_DAYS, members, strict=True))[days]
