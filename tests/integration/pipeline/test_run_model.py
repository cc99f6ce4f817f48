"""A run's own model: named by the request (model data, a package version or group) or by
the stack's package; Plan refuses one that is not approved or whose data the jobs may not
read, creates it once the run is claimed, and the end of the run deletes it."""

from dataclasses import replace

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from batchinfer.errors import ValidationError
from batchinfer.pipeline.jobs.run_model import OwnModel, create_run_model, delete_run_model
from batchinfer.pipeline.steps.record_failure import record_failure

from .conftest import BUCKET
from .test_plan import plan

MODELS = "s3://acme-models/scoring/"
IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/batchinfer:latest"
GROUP_ARN = "arn:aws:sagemaker:eu-west-1:123456789012:model-package-group/scoring"


@pytest.fixture
def registry(account):
    """The account with model sources and a package group: v1 and v2 approved, v3 pending."""
    account.env = replace(account.env, model_sources=(MODELS,))
    account.put("input/d.csv", b"1,2\n")
    account.sagemaker.create_model_package_group(ModelPackageGroupName="scoring")
    versions = []
    for number, status in enumerate(["Approved", "Approved", "PendingManualApproval"], 1):
        versions.append(
            account.sagemaker.create_model_package(
                ModelPackageGroupName="scoring",
                ModelApprovalStatus=status,
                InferenceSpecification={
                    "Containers": [
                        {"Image": IMAGE, "ModelDataUrl": f"{MODELS}v{number}/model.tar.gz"}
                    ],
                    "SupportedContentTypes": ["text/csv"],
                    "SupportedResponseMIMETypes": ["text/csv"],
                },
            )["ModelPackageArn"]
        )
    account.versions = versions
    return account


def _model(account, name: str) -> dict:
    return account.sagemaker.describe_model(ModelName=name)


def test_model_data_for_one_run_gets_a_model_of_its_own(registry):
    data = f"{MODELS}v9/model.tar.gz"
    result = plan(registry, {"input": f"s3://{BUCKET}/input/d.csv", "model_data": data})
    assert result["model_name"] == "bi-test-exec-1-model"
    assert result["model_data_url"] == data
    model = _model(registry, "bi-test-exec-1-model")
    assert model["PrimaryContainer"]["Image"] == registry.env.image_uri
    assert model["PrimaryContainer"]["ModelDataUrl"] == data
    assert model["ExecutionRoleArn"] == registry.env.sagemaker_role_arn
    assert registry.table.get_run("exec-1")["run_model"] == "bi-test-exec-1-model"


def test_a_package_version_must_be_approved_and_is_named(registry):
    v1, _, v3 = registry.versions
    result = plan(registry, {"input": f"s3://{BUCKET}/input/d.csv", "model_package_arn": v1})
    assert result["model_data_url"] == f"{MODELS}v1/model.tar.gz"
    container = _model(registry, result["model_name"])["PrimaryContainer"]
    assert container["ModelPackageName"] == v1
    with pytest.raises(
        ValidationError,
        match=rf"model_package_arn: {v3} is PendingManualApproval, not Approved; approve it",
    ):
        plan(registry, {"input": f"s3://{BUCKET}/input/d.csv", "model_package_arn": v3}, "e2")
    assert registry.table.get_run("e2") is None, "nothing claimed, no model made"


def test_a_group_gives_its_newest_approved_version(registry):
    result = plan(registry, {"input": f"s3://{BUCKET}/input/d.csv", "model_package_arn": GROUP_ARN})
    container = _model(registry, result["model_name"])["PrimaryContainer"]
    assert container["ModelPackageName"] == registry.versions[1]


def test_the_stacks_package_gives_every_run_its_own_model(registry):
    registry.env = replace(registry.env, model_name="", model_package_arn=GROUP_ARN)
    result = plan(registry, {"input": f"s3://{BUCKET}/input/d.csv"})
    assert result["model_name"] == "bi-test-exec-1-model"
    assert result["model_data_url"] == f"{MODELS}v2/model.tar.gz"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (
            {"model_data": "s3://elsewhere/model.tar.gz"},
            r"model_data: 's3://elsewhere/model.tar.gz' is outside the stack's model_sources, "
            r"which its jobs may read: s3://acme-models/scoring/",
        ),
        ({"model_data": f"{MODELS}model.zip"}, r"is not a \.tar\.gz model archive"),
        (
            {"model_data": f"{MODELS}m.tar.gz", "model_package_arn": GROUP_ARN},
            r"model_package_arn, model_data: give one of them, not both",
        ),
        ({"model_package_arn": "scoring"}, r"model_package_arn: 'scoring' is not a model package"),
        (
            {"model_package_arn": GROUP_ARN.replace("scoring", "empty")},
            r"model-package-group/empty has no Approved version",
        ),
    ],
)
def test_bad_model_choices_are_refused_naming_the_key(registry, request_, message):
    registry.sagemaker.create_model_package_group(ModelPackageGroupName="empty")
    with pytest.raises(ValidationError, match=message):
        plan(registry, {"input": f"s3://{BUCKET}/input/d.csv", **request_})
    assert registry.table.get_run("exec-1") is None


def test_processing_cannot_use_an_existing_model_whose_data_it_cannot_read(registry):
    registry.env = replace(registry.env, model_data_url="")
    with pytest.raises(ValidationError, match=r"engine: processing jobs load the model's data"):
        plan(registry, {"input": f"s3://{BUCKET}/input/d.csv", "engine": "processing"})
    data = {"model_data": f"{MODELS}v9/model.tar.gz"}
    request = {"input": f"s3://{BUCKET}/input/d.csv", "engine": "processing", **data}
    assert plan(registry, request)["model_data_url"] == data["model_data"]


def test_a_failed_run_deletes_its_model_once(registry):
    request = {"input": f"s3://{BUCKET}/input/d.csv", "model_data": f"{MODELS}v9/model.tar.gz"}
    state = {"plan": plan(registry, request), "error": {"Error": "X", "Cause": "broken"}}
    clients = {
        "env": registry.env,
        "table": registry.table,
        "events": registry.events,
        "sns": registry.sns,
        "sagemaker": registry.sagemaker,
    }
    execution = "arn:aws:states:eu-west-1:123456789012:execution:runs:exec-1"
    record_failure(state, execution=execution, execution_name="exec-1", **clients)
    with pytest.raises(ClientError, match="Could not find model"):
        _model(registry, "bi-test-exec-1-model")
    record_failure(state, execution=execution, execution_name="exec-1", **clients)  # again


def test_creating_and_deleting_survive_a_repeated_step(account):
    """SageMaker refuses a second CreateModel of a name and a DeleteModel of a missing one;
    a retried step meets both and carries on (moto does not refuse either)."""
    stubber = Stubber(account.sagemaker)
    exists = 'Cannot create already existing model "arn:aws:sagemaker:eu-west-1:1:model/m".'
    stubber.add_client_error("create_model", "ValidationException", exists)
    stubber.add_client_error("delete_model", "ValidationException", 'Could not find model "m".')
    stubber.add_client_error("delete_model", "ThrottlingException", "Rate exceeded")
    model = OwnModel(None, f"{MODELS}m.tar.gz")
    with stubber:
        create_run_model(model, "m", run_id="r", env=account.env, sagemaker=account.sagemaker)
        delete_run_model("m", account.sagemaker)
        with pytest.raises(ClientError, match="Rate exceeded"):
            delete_run_model("m", account.sagemaker)
