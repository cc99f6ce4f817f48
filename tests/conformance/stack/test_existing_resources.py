"""A stack over a team's existing resources: two data sources (one with its own key), an
output destination with its own key, an existing image, a VPC and a model package group of
the Model Registry. The roles that read inputs may read the sources, the ones that write
outputs the destination, each with its key and nothing more; Plan may create runs' own
models and the end of a run delete them; jobs on an instance-store type carry no volume
key; cdk-nag stays clean."""

from dataclasses import replace

import pytest
from cdk_nag import AwsSolutionsChecks

from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.steps.prepare_job import prepare_job
from tests.support.run_state import example_plan, example_round

from .conftest import pipeline_environment, synthesize_prod
from .test_vpc import VPC

LAKE_KEY = "arn:aws:kms:eu-west-1:210987654321:key/0f0f0f0f-1111-2222-3333-444444444444"
REPORTS_KEY = "arn:aws:kms:eu-west-1:123456789012:key/abababab-5555-6666-7777-888888888888"
SOURCES = [
    {"name": "lake", "bucket": "example-data-lake", "prefix": "scoring/", "kms_key_arn": LAKE_KEY},
    {"name": "archive", "bucket": "acme-archive"},
]
DESTINATIONS = [
    {
        "name": "reports",
        "bucket": "example-reports",
        "prefix": "batchinfer/",
        "kms_key_arn": REPORTS_KEY,
    }
]
IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/scoring:2026-11"
PACKAGES = "arn:aws:sagemaker:eu-west-1:123456789012:model-package-group/scoring"
MODEL_SOURCE = "s3://sagemaker-eu-west-1-123456789012/scoring/"


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    return synthesize_prod(
        tmp_path_factory.mktemp("cdk.out"),
        data_sources=SOURCES,
        output_destinations=DESTINATIONS,
        image_uri=IMAGE,
        vpc=VPC,
        model_data=None,
        model_package_arn=PACKAGES,
        model_sources=[MODEL_SOURCE],
        transform={"instance_type": "ml.g5.xlarge", "content_type": "text/csv"},
    )


def _statements(template, role_fragment: str) -> dict[str, dict]:
    """The statements of the policies attached to the one role whose id holds the fragment."""
    resources = template["Resources"]
    (role,) = [
        k for k, v in resources.items() if v["Type"] == "AWS::IAM::Role" and role_fragment in k
    ]
    return {
        statement.get("Sid", ""): statement
        for policy in resources.values()
        if policy["Type"] == "AWS::IAM::Policy" and {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    }


def _objects(*paths: str) -> list[str] | str:
    """The resource of a statement on these S3 objects (one ARN stands alone)."""
    arns = [f"arn:aws:s3:::{path}" for path in paths]
    return arns if len(arns) > 1 else arns[0]


@pytest.mark.parametrize("step", ["SplitObject", "CopyUnsplit"])
def test_steps_that_read_inputs_may_read_every_source_with_its_key(synthesized, step):
    statements = _statements(synthesized.template_json, f"{step}Role")
    read = statements["ReadSources"]
    # SplitObject copies the version it measured; CopyUnsplit copies a whole object by the
    # ETag the split job measured.
    versions = ["s3:GetObjectVersion"] if step == "SplitObject" else []
    assert read["Action"] == (["s3:GetObject", *versions] if versions else "s3:GetObject")
    assert read["Resource"] == _objects("acme-archive/*", "example-data-lake/scoring/*")
    assert statements["ReadSourcesKeys"] == {
        "Sid": "ReadSourcesKeys",
        "Effect": "Allow",
        "Action": "kms:Decrypt",
        "Resource": LAKE_KEY,
    }
    assert not {"ListSources0", "ReadDestinations", "WriteDestinations"} & set(statements)


def test_plan_lists_the_sources_and_reads_them_for_a_header(synthesized):
    """Plan lists the sources, and reads the first object's header line of a run whose
    inputs have one (its names go to the jobs' model server)."""
    statements = _statements(synthesized.template_json, "PlanRole")
    lake_list = statements["ListSources0"]
    assert lake_list["Action"] == "s3:ListBucket"
    assert lake_list["Condition"] == {"StringLike": {"s3:prefix": ["scoring/*"]}}
    assert "Condition" not in statements["ListSources1"], "the whole archive bucket"
    assert statements["ReadSources"]["Action"] == "s3:GetObject"
    assert statements["ReadSources"]["Resource"] == _objects(
        "acme-archive/*", "example-data-lake/scoring/*"
    )
    assert not {"ReadDestinations", "WriteDestinations"} & set(statements)


def test_collect_reads_no_input(synthesized):
    """Collect reads the split Map's results and shard indexes only: the objects that needed
    no split were copied by their own split Map items."""
    statements = _statements(synthesized.template_json, "CollectRole")
    assert not {"ReadSources", "ReadDestinations", "WriteDestinations"} & set(statements)


@pytest.mark.parametrize("writer", ["MergeObjectRole", "FinalizeRole"])
def test_count_shard_reads_and_the_merge_and_finalize_write_the_destination_with_its_key(
    synthesized, writer
):
    """CountShard writes there too: an output whose records were set aside (bad_records
    quarantine) is rewritten without them, beside its errors file."""
    count = _statements(synthesized.template_json, "CountShardRole")
    verify = _statements(synthesized.template_json, "VerifyRole")
    finalize = _statements(synthesized.template_json, writer)
    assert count["ReadDestinations"]["Resource"] == _objects("example-reports/batchinfer/*")
    assert count["WriteDestinations"]["Resource"] == _objects("example-reports/batchinfer/*")
    assert not [sid for sid in verify if "Destinations" in sid], "Verify reads no output"
    write = finalize["WriteDestinations"]
    assert sorted(write["Action"]) == ["s3:AbortMultipartUpload", "s3:PutObject"]
    assert write["Resource"] == _objects("example-reports/batchinfer/*")
    assert finalize["WriteDestinationsKeys"]["Resource"] == REPORTS_KEY
    assert set(finalize["WriteDestinationsKeys"]["Action"]) == {
        "kms:Decrypt",
        "kms:GenerateDataKey",
    }
    assert not {"ReadSources"} & (set(count) | set(verify) | set(finalize))


@pytest.mark.parametrize("step", ["PrepareJob", "RecordFailure"])
def test_other_steps_get_no_existing_bucket(synthesized, step):
    statements = _statements(synthesized.template_json, f"{step}Role")
    assert not [sid for sid in statements if "Sources" in sid or "Destinations" in sid]


def test_jobs_write_the_destination_and_never_read_the_sources(synthesized):
    statements = _statements(synthesized.template_json, "ExecutionRole")
    assert statements["WriteDestinations"]["Resource"] == _objects("example-reports/batchinfer/*")
    assert statements["WriteDestinationsKeys"]["Resource"] == REPORTS_KEY
    assert "ReadSources" not in statements, "jobs read only the run's shards"
    repository = "arn:aws:ecr:eu-west-1:123456789012:repository/scoring"
    assert statements["PullImage"]["Resource"] == repository


def _environment(template) -> PipelineEnvironment:
    return pipeline_environment(
        template,
        table_name="t",
        data_bucket="batchinfer-test-data",
        kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/stack",
        sagemaker_role_arn="arn:aws:iam::123456789012:role/jobs",
        image_uri=IMAGE,
    )


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_a_g5_job_writing_to_the_destination_uses_its_key_and_no_volume_key(synthesized, engine):
    """The Lambdas' environment from the template: the places and the VPC arrive; a job on
    ml.g5 (an instance store) asks for no VolumeKmsKeyId, its output takes the
    destination's key."""
    env = _environment(synthesized.template_json)
    assert [p.name for p in env.input_places] == ["data", "lake", "archive"]
    assert [p.name for p in env.output_places] == ["data", "reports"]
    plan = replace(
        example_plan(engine, instance_type="ml.g5.xlarge"),
        job_output="s3://example-reports/batchinfer/r-1/",
    )
    request = prepare_job(plan, example_round(), env=env, s3=None).request
    if engine == "transform":
        assert "VolumeKmsKeyId" not in request["TransformResources"]
        assert request["TransformOutput"]["KmsKeyId"] == REPORTS_KEY
    else:
        assert "VolumeKmsKeyId" not in request["ProcessingResources"]["ClusterConfig"]
        assert request["ProcessingOutputConfig"]["KmsKeyId"] == REPORTS_KEY
        assert request["NetworkConfig"]["VpcConfig"]["Subnets"] == VPC["subnet_ids"]


def test_a_model_package_gives_runs_their_own_models(synthesized):
    """No model is made at deploy: Plan checks the package and creates each run's model
    (passing the jobs' role), Finalize and RecordFailure delete it; jobs may read the
    packages' model data."""
    resources = synthesized.template_json["Resources"]
    assert not [r for r in resources.values() if r["Type"] == "AWS::SageMaker::Model"]
    env = _environment(synthesized.template_json)
    assert (env.model_package_arn, env.model_name) == (PACKAGES, "")
    models = "arn:aws:sagemaker:eu-west-1:123456789012:model/bi-prod-*"
    plan = _statements(synthesized.template_json, "PlanRole")
    assert plan["CreateRunModels"]["Resource"] == models
    assert plan["DescribeModelPackages"]["Resource"] == (
        "arn:aws:sagemaker:eu-west-1:123456789012:model-package/*"
    )
    assert plan["PassJobRole"]["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }
    for step in ("Finalize", "RecordFailure"):
        assert _statements(synthesized.template_json, f"{step}Role")["DeleteRunModels"] == {
            "Sid": "DeleteRunModels",
            "Effect": "Allow",
            "Action": "sagemaker:DeleteModel",
            "Resource": models,
        }
    for step in ("SplitObject", "Collect", "PrepareJob", "CountShard", "Verify", "MergeObject"):
        statements = _statements(synthesized.template_json, f"{step}Role")
        assert not {"CreateRunModels", "DeleteRunModels", "PassJobRole"} & set(statements)
    jobs = _statements(synthesized.template_json, "ExecutionRole")
    assert jobs["ReadModelData"]["Resource"] == (
        "arn:aws:s3:::sagemaker-eu-west-1-123456789012/scoring/*"
    )
    outputs = synthesized.template_json["Outputs"]
    assert outputs["ModelName"]["Value"] == PACKAGES


def test_cdk_nag_is_clean_over_existing_resources(synthesized):
    report = AwsSolutionsChecks(synthesized.app).validate_scope(synthesized.stack)
    assert [(v.rule_name, v.resource) for v in report.violations] == []
