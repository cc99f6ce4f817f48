"""BatchInferencePipeline in another team's stack: every resource of the pipeline lands in
that stack beside the team's own, from any working directory, cdk-nag stays clean, its
properties name the resources, and its config is validated; PipelineStack composes it as
``Default``, so the logical ids of the deployed stacks stay those of the pipeline's own
constructs."""

from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, CfnResource, Environment, Stack
from aws_cdk import aws_ssm as ssm
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

from app import cdk_json_context
from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract import stack_outputs
from batchinfer.pipeline.contract.registry import STEPS
from stacks import BatchInferencePipeline, PipelineStack
from stacks.config import (
    AdmissionConfig,
    PipelineConfig,
    RetryConfig,
    S3TriggerConfig,
    ScheduleConfig,
)

from .conftest import ACCOUNT, REGION, pipeline_functions

CONFIG = PipelineConfig(
    name="analytics",
    stack_name="analytics-scoring",
    job_prefix="bi-analytics",
    model_data="s3://example-models-bucket/row-sum/model.tar.gz",
    region=REGION,
    transform={
        "content_type": "text/csv",
        "accept": "text/csv",
        "split_type": "Line",
        "instance_type": "ml.m5.large",
        "instance_count": 1,
    },
    processing_max_runtime_hours=8,
    retry=RetryConfig(max_attempts=4),
    admission=AdmissionConfig(instance_budget={"ml.m5.large": 4}),
    schedules=(
        ScheduleConfig(
            name="nightly", expression="cron(0 2 * * ? *)", input={"input": "bucket://data/input/"}
        ),
    ),
    s3_trigger=S3TriggerConfig(prefix="input/arrivals/"),
    notification_emails=("analytics-oncall@example.com",),
)


# The other team's app sets the feature flags `cdk init` writes, as cdk.json does.
FEATURE_FLAGS = {k: v for k, v in cdk_json_context().items() if k.startswith("@aws-cdk")}


class Foreign:
    def __init__(self, outdir: Path) -> None:
        self.app = App(outdir=str(outdir), context=FEATURE_FLAGS)
        self.stack = Stack(
            self.app, "ForeignTeamStack", env=Environment(account=ACCOUNT, region=REGION)
        )
        self.setting = ssm.StringParameter(
            self.stack, "TeamSetting", parameter_name="/analytics/owner", string_value="analytics"
        )
        self.pipeline = BatchInferencePipeline(self.stack, "BatchInference", config=CONFIG)
        self.template: dict[str, Any] = Template.from_stack(self.stack).to_json()

    def logical_id(self, construct: IConstruct) -> str:
        resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
        assert isinstance(resource, CfnResource)
        return self.stack.get_logical_id(resource)

    def resource(self, construct: IConstruct) -> dict[str, Any]:
        return self.template["Resources"][self.logical_id(construct)]


@pytest.fixture(scope="module")
def foreign(tmp_path_factory: pytest.TempPathFactory) -> Foreign:
    # Assets resolve from the sources beside the stacks package, not the working directory.
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(elsewhere)
        return Foreign(tmp_path_factory.mktemp("cdk.out"))


def test_the_pipeline_is_built_inside_the_foreign_stack_beside_its_own_resource(foreign):
    pipeline, resources = foreign.pipeline, foreign.template["Resources"]
    assert foreign.resource(foreign.setting)["Type"] == "AWS::SSM::Parameter"
    expected = {
        pipeline.state_machine: "AWS::StepFunctions::StateMachine",
        pipeline.data_bucket: "AWS::S3::Bucket",
        pipeline.access_log_bucket: "AWS::S3::Bucket",
        pipeline.key: "AWS::KMS::Key",
        pipeline.table: "AWS::DynamoDB::Table",
        pipeline.topic: "AWS::SNS::Topic",
        pipeline.event_bus: "AWS::Events::EventBus",
        pipeline.jobs_role: "AWS::IAM::Role",
        pipeline.cli_policy: "AWS::IAM::ManagedPolicy",
    }
    assert pipeline.sagemaker_model is not None
    expected[pipeline.sagemaker_model] = "AWS::SageMaker::Model"
    for construct, kind in expected.items():
        assert foreign.resource(construct)["Type"] == kind, construct.node.path
        assert construct.node.path.startswith("ForeignTeamStack/BatchInference/")
    assert set(pipeline.lambda_functions) == {step.name for step in STEPS}
    for function in pipeline.lambda_functions.values():
        assert foreign.resource(function)["Type"] == "AWS::Lambda::Function"
    assert len(pipeline_functions(foreign.template)) == len(STEPS)
    kinds = {r["Type"] for r in resources.values()}
    assert {"AWS::Scheduler::Schedule", "AWS::SQS::Queue", "AWS::CloudWatch::Alarm"} <= kinds


def test_the_outputs_are_the_foreign_stacks_and_name_the_pipelines_resources(foreign):
    outputs = foreign.template["Outputs"]
    assert set(outputs) == set(stack_outputs.ALL)
    arn = outputs[stack_outputs.STATE_MACHINE_ARN]
    assert arn["Export"] == {"Name": "ForeignTeamStack-StateMachineArn"}
    assert arn["Value"] == {"Ref": foreign.logical_id(foreign.pipeline.state_machine)}


def test_cdk_nag_is_clean_in_the_foreign_stack(foreign):
    report = AwsSolutionsChecks(foreign.app).validate_scope(foreign.stack)
    problems = [
        f"{v.rule_name}: {[r.construct_path for r in v.violating_resources]}"
        for v in report.violations
    ]
    assert problems == []


def test_the_config_is_validated_as_an_environment_of_cdk_json():
    stack = Stack(App(context=FEATURE_FLAGS), "ForeignTeamStack")
    bad = PipelineConfig(**{**CONFIG.__dict__, "job_prefix": "Analytics"})
    with pytest.raises(ValidationError, match=r"^environments\.analytics\.job_prefix: 'Analytics'"):
        BatchInferencePipeline(stack, "BatchInference", config=bad)


def test_the_stack_holds_the_construct_as_default_so_logical_ids_stay(synthesized):
    stack = synthesized.stack
    assert isinstance(stack, PipelineStack)
    assert stack.pipeline.node.path == f"{stack.stack_name}/Default"
    # The logical ids deployed stacks have: a change would replace the resource and its data.
    assert {
        "WorkflowStateMachine8F1B1C15": stack.pipeline.state_machine,
        "StorageData6BB23F4E": stack.pipeline.data_bucket,
        "StatusTable410D4755": stack.pipeline.table,
        "Model2AD80A05": stack.pipeline.sagemaker_model,
    } == {
        stack.get_logical_id(c if isinstance(c, CfnResource) else c.node.default_child): c
        for c in (
            stack.pipeline.state_machine,
            stack.pipeline.data_bucket,
            stack.pipeline.table,
            stack.pipeline.sagemaker_model,
        )
    }
