"""A run with a model of its own, through the synthesized state machine: model data or an
approved model package named in the request gives a model created for the run (its jobs
use it) and deleted when the run ends, succeeded or failed; a package that is not
approved is refused by Plan before anything is made."""

import pytest

from batchinfer.pipeline.storage.status_table import FAILED, SUCCEEDED, StatusTable
from tests.support.models import ROW_SUM
from tests.support.offline import model_archive

NEGATED = ROW_SUM.replace("return sum", "return lambda row: -sum(row)")
MODEL_DATA = "s3://example-models-bucket/negated/model.tar.gz"


@pytest.fixture
def negated(stack, tmp_path):
    """The stack with a second model, under its model sources: it negates each row's sum."""
    archive = model_archive(NEGATED, tmp_path)
    stack.s3.upload_file(str(archive), "example-models-bucket", "negated/model.tar.gz")
    return stack


def _package(stack, status: str) -> str:
    sagemaker = stack.jobs.sagemaker
    sagemaker.create_model_package_group(ModelPackageGroupName="scoring")
    return sagemaker.create_model_package(
        ModelPackageGroupName="scoring",
        ModelApprovalStatus=status,
        InferenceSpecification={
            "Containers": [
                {"Image": "1.dkr.ecr.eu-west-1.amazonaws.com/i:1", "ModelDataUrl": MODEL_DATA}
            ],
            "SupportedContentTypes": ["text/csv"],
            "SupportedResponseMIMETypes": ["text/csv"],
        },
    )["ModelPackageArn"]


def _models(stack) -> list[str]:
    return [m["ModelName"] for m in stack.jobs.sagemaker.list_models()["Models"]]


@pytest.mark.parametrize("choice", ["model_data", "model_package_arn"])
def test_a_run_with_its_own_model_uses_it_and_deletes_it(negated, choice):
    negated.put("input/own/a.csv", b"1,2\n3,4\n")
    value = MODEL_DATA if choice == "model_data" else _package(negated, "Approved")
    request = {"input": f"s3://{negated.bucket}/input/own/", "run_id": "own", choice: value}
    execution = negated.run(request, "exec-own")
    assert execution.status == "SUCCEEDED", execution.cause

    ((_, job),) = negated.jobs.requests
    assert job["ModelName"] == "bi-dev-own-model"
    assert negated.get(f"s3://{negated.bucket}/output/own/a.csv.out") == b"-3\n-7\n"
    run = StatusTable.named(negated.table_name).get_run("own")
    assert run["run_status"] == SUCCEEDED and run["run_model"] == "bi-dev-own-model"
    assert "bi-dev-own-model" not in _models(negated), "deleted when the run ended"


def test_a_failed_run_deletes_its_model_too(negated):
    negated.put("input/bad/a.csv", b"1,2\nbad,4\n")
    request = {
        "input": f"s3://{negated.bucket}/input/bad/",
        "run_id": "bad",
        "model_data": MODEL_DATA,
    }
    execution = negated.run(request, "exec-bad")
    assert execution.status == "FAILED"
    assert StatusTable.named(negated.table_name).get_run("bad")["run_status"] == FAILED
    assert "bi-dev-bad-model" not in _models(negated)


def test_a_package_that_is_not_approved_is_refused_by_plan(negated):
    pending = _package(negated, "PendingManualApproval")
    negated.put("input/p/a.csv", b"1,2\n")
    request = {"input": f"s3://{negated.bucket}/input/p/", "model_package_arn": pending}
    execution = negated.run(request, "exec-pending")
    assert execution.status == "FAILED" and execution.error == "ValidationError"
    assert f"model_package_arn: {pending} is PendingManualApproval, not Approved" in (
        execution.cause
    )
    assert not _models(negated) and not negated.jobs.requests
