"""The run status table: on-demand, point-in-time recovery, KMS, TTL, a GSI by status."""

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from batchinfer.pipeline.storage import status_table as keys
from stacks.config import PipelineConfig
from stacks.storage import Storage


class StatusTable(Construct):
    """``table``: pk ``run_id``, sk ``RUN``/``SHARD#<n>`` (see
    :mod:`batchinfer.pipeline.storage.status_table`)."""

    def __init__(
        self, scope: Construct, id: str, *, config: PipelineConfig, storage: Storage
    ) -> None:
        super().__init__(scope, id)
        # Table (not TableV2): a customer-managed key on TableV2 needs a region-bound stack.
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(
                name=keys.PARTITION_KEY, type=dynamodb.AttributeType.STRING
            ),
            sort_key=dynamodb.Attribute(name=keys.SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=storage.key,
            time_to_live_attribute=keys.TTL_ATTRIBUTE,
            deletion_protection=config.retain_data,
            removal_policy=RemovalPolicy.RETAIN if config.retain_data else RemovalPolicy.DESTROY,
        )
        self.table.add_global_secondary_index(
            index_name=keys.STATUS_INDEX,
            partition_key=dynamodb.Attribute(
                name=keys.STATUS_INDEX_PARTITION, type=dynamodb.AttributeType.STRING
            ),
            sort_key=dynamodb.Attribute(
                name=keys.STATUS_INDEX_SORT, type=dynamodb.AttributeType.STRING
            ),
            projection_type=dynamodb.ProjectionType.ALL,
        )
