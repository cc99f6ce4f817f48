"""Storage: the customer-managed key, the data bucket and its access-log bucket."""

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from batchinfer.pipeline.contract.data_places import DATA
from batchinfer.pipeline.contract.layout import MAP_RESULTS_PREFIX, RUNS_PREFIX, SHARDS_PREFIX
from stacks.config import PipelineConfig
from stacks.log_groups import allow_log_encryption
from stacks.nag import acknowledge


class Storage(Construct):
    """A KMS key (rotation on; CloudWatch Logs may use it for the stack's log groups) and a
    TLS-only, versioned, access-logged data bucket holding ``input/``, ``shards/``,
    ``output/`` and ``runs/`` (see :mod:`batchinfer.pipeline.contract.layout`).
    """

    def __init__(self, scope: Construct, id: str, *, config: PipelineConfig) -> None:
        super().__init__(scope, id)
        removal = RemovalPolicy.RETAIN if config.retain_data else RemovalPolicy.DESTROY
        self.key = kms.Key(
            self,
            "Key",
            description=f"batchinfer {config.name}: data, status table, topic and logs",
            enable_key_rotation=True,
            removal_policy=removal,
        )
        allow_log_encryption(self.key)
        self.log_bucket = s3.Bucket(
            self,
            "AccessLogs",
            # S3 server access logging can only deliver to SSE-S3 buckets.
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-access-logs",
                    expiration=Duration.days(config.artefact_expiry_days),
                    noncurrent_version_expiration=Duration.days(7),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            removal_policy=removal,
            auto_delete_objects=False,
        )
        acknowledge(
            self.log_bucket,
            "AwsSolutions-S1",
            "This bucket is the destination of the data bucket's server access logs; logging "
            "it to itself would loop and another log bucket would only move the finding.",
        )
        self.data_bucket = s3.Bucket(
            self,
            "Data",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.log_bucket,
            server_access_logs_prefix="data-bucket/",
            event_bridge_enabled=config.s3_trigger is not None and config.s3_trigger.source == DATA,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="abort-incomplete-uploads",
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                ),
                s3.LifecycleRule(
                    id="expire-shards",
                    prefix=SHARDS_PREFIX,
                    expiration=Duration.days(config.shard_expiry_days),
                    noncurrent_version_expiration=Duration.days(1),
                ),
                s3.LifecycleRule(
                    id="expire-map-results",
                    prefix=MAP_RESULTS_PREFIX,
                    expiration=Duration.days(config.shard_expiry_days),
                    noncurrent_version_expiration=Duration.days(1),
                ),
                s3.LifecycleRule(
                    id="expire-run-artefacts",
                    prefix=RUNS_PREFIX,
                    expiration=Duration.days(config.artefact_expiry_days),
                    noncurrent_version_expiration=Duration.days(7),
                ),
                s3.LifecycleRule(
                    id="expire-old-versions",
                    noncurrent_version_expiration=Duration.days(30),
                    expired_object_delete_marker=True,
                ),
            ],
            removal_policy=removal,
        )

    def data_arn(self, prefix: str) -> str:
        """The ARN of every object under ``prefix`` of the data bucket."""
        return self.data_bucket.arn_for_objects(f"{prefix}*")
