"""The split Map's item reader and result writer, granted only the run folders they use
(CDK's own grant the whole bucket when the item key comes from the state): the item list
under ``runs/``, the results under ``runs/_map-results/``."""

import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn

from batchinfer.pipeline.contract.layout import MAP_RESULTS_FORMAT, MAP_RESULTS_PREFIX, RUNS_PREFIX


class RunItemReader(sfn.S3JsonLItemReader):
    """Reads the run's item list, a JSON Lines file at a key under ``runs/``."""

    @jsii.member(jsii_name="providePolicyStatements")
    def provide_policy_statements(self) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(
                actions=["s3:GetObject"],
                resources=[self.bucket.arn_for_objects(f"{RUNS_PREFIX}*")],
            )
        ]


class RunResultWriter(sfn.ResultWriterV2):
    """Writes the Map's results (a multipart upload) under ``runs/_map-results/``, as
    :data:`MAP_RESULTS_FORMAT` says: JSON Lines, a succeeded child as its output alone
    (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html)."""

    def __init__(self, *, bucket: s3.IBucket) -> None:
        super().__init__(
            bucket=bucket,
            prefix=MAP_RESULTS_PREFIX.rstrip("/"),
            writer_config=sfn.WriterConfig(
                output_type=sfn.OutputType[MAP_RESULTS_FORMAT["OutputType"]],
                transformation=sfn.Transformation[MAP_RESULTS_FORMAT["Transformation"]],
            ),
        )

    @jsii.member(jsii_name="providePolicyStatements")
    def provide_policy_statements(self) -> list[iam.PolicyStatement]:
        assert self.bucket is not None
        return [
            iam.PolicyStatement(
                actions=["s3:PutObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"],
                resources=[self.bucket.arn_for_objects(f"{MAP_RESULTS_PREFIX}*")],
            )
        ]
