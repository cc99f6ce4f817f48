"""A stack configured for a VPC (``vpc`` in cdk.json): the model (so every transform job),
the processing jobs and every Lambda run in its subnets with its security groups; their
roles may manage the network interfaces that takes; cdk-nag stays clean."""

import pytest
from cdk_nag import AwsSolutionsChecks

from batchinfer.pipeline.contract.registry import STEPS

from .conftest import pipeline_environment, pipeline_functions, synthesize_prod

VPC = {"subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
       "security_group_ids": ["sg-0bbbbbbbbbbbbbbb1"]}  # fmt: skip


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    result = synthesize_prod(tmp_path_factory.mktemp("cdk.out"), vpc=VPC)
    return result.app, result.stack, result.template_json


def _of_type(template, kind):
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def test_the_model_and_every_pipeline_lambda_run_in_the_subnets(synthesized):
    _, _, template = synthesized
    (model,) = _of_type(template, "AWS::SageMaker::Model")
    assert model["VpcConfig"] == {
        "Subnets": VPC["subnet_ids"],
        "SecurityGroupIds": VPC["security_group_ids"],
    }
    pipeline = pipeline_functions(template)
    assert len(pipeline) == len(STEPS)
    arrivals = [
        f for f in _of_type(template, "AWS::Lambda::Function") if f["Handler"] == "arrivals.handler"
    ]
    assert len(arrivals) == 1, "the shipped prod example has an S3 trigger"
    for function in pipeline + arrivals:
        assert function["VpcConfig"] == {
            "SubnetIds": VPC["subnet_ids"],
            "SecurityGroupIds": VPC["security_group_ids"],
        }


def test_processing_jobs_get_the_vpc_in_their_request(synthesized):
    _, _, template = synthesized
    env = pipeline_environment(template, table_name="t", data_bucket="b")
    assert env.vpc_config == {
        "Subnets": VPC["subnet_ids"],
        "SecurityGroupIds": VPC["security_group_ids"],
    }


def test_roles_may_manage_network_interfaces_and_nag_is_clean(synthesized):
    app, stack, template = synthesized
    network = [
        statement
        for policy in _of_type(template, "AWS::IAM::Policy")
        for statement in policy["PolicyDocument"]["Statement"]
        if statement.get("Sid") == "NetworkInterfaces"
    ]
    # Every step's role, the arrivals Lambda's, the jobs' and the split jobs'.
    assert len(network) == len(STEPS) + 3
    report = AwsSolutionsChecks(app).validate_scope(stack)
    assert [v.rule_name for v in report.violations] == []
