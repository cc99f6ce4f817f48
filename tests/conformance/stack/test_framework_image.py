"""A stack on one of AWS's framework inference images (``framework_image``): the SDK's
lookup resolves it for the stack's region at synth, offline; nothing is built; the model
points the container at ``code/inference.py``; the jobs may pull it; processing runs are
refused; cdk-nag stays clean."""

import json

import pytest
from cdk_nag import AwsSolutionsChecks

from batchinfer.errors import ValidationError

from .conftest import pipeline_functions, synthesize_prod

SKLEARN = "141502667606.dkr.ecr.eu-west-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("cdk.out")
    result = synthesize_prod(
        outdir,
        framework_image={"framework": "sklearn", "version": "1.2-1"},
        model_environment={"MODEL_LOG_LEVEL": "warning"},
    )
    assets = json.loads((outdir / f"{result.stack.stack_name}.assets.json").read_text())
    return result, assets


def test_the_framework_image_is_resolved_for_the_region(synthesized):
    result, assets = synthesized
    template = result.template_json
    assert assets.get("dockerImages", {}) == {}, "no image to build or push"
    (model,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Model"]
    container = model["Properties"]["PrimaryContainer"]
    assert container["Image"] == SKLEARN
    assert container["Environment"] == {
        "SAGEMAKER_PROGRAM": "inference.py",
        "SAGEMAKER_SUBMIT_DIRECTORY": "/opt/ml/model/code",
        "MODEL_LOG_LEVEL": "warning",
    }
    pulls = [
        statement["Resource"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Sid") == "PullImage"
    ]
    assert pulls == ["arn:aws:ecr:eu-west-1:141502667606:repository/sagemaker-scikit-learn"]
    variables = [f["Environment"]["Variables"] for f in pipeline_functions(template)]
    assert {v["BATCHINFER_FRAMEWORK_IMAGE"] for v in variables} == {"sklearn 1.2-1"}


def test_cdk_nag_is_clean_on_a_framework_image(synthesized):
    result, _ = synthesized
    report = AwsSolutionsChecks(result.app).validate_scope(result.stack)
    assert [v.rule_name for v in report.violations] == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"framework_image": {"framework": "sklearn", "version": "9.9"}},
            r"environments\.prod\.framework_image: Unsupported sklearn version: 9\.9.*"
            r"Supported sklearn version\(s\): .*1\.2-1",
        ),
        (
            {"framework_image": {"framework": "tensorflow", "version": "2"}},
            r"framework_image\.framework: 'tensorflow' is not allowed; allowed: sklearn, "
            r"xgboost, pytorch",
        ),
        (
            {"framework_image": {"framework": "xgboost", "version": "1.7-1"}, "region": None},
            r"environments\.prod\.region: None is not allowed; allowed: a region",
        ),
        (
            {
                "framework_image": {"framework": "xgboost", "version": "1.7-1"},
                "image_uri": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/x:1",
            },
            r"give image_uri or framework_image, not both",
        ),
        (
            {
                "framework_image": {"framework": "xgboost", "version": "1.7-1"},
                "engine": "processing",
            },
            r"environments\.prod\.engine: 'processing' is not allowed",
        ),
    ],
)
def test_framework_images_are_checked_at_synth(tmp_path, changes, message):
    with pytest.raises(ValidationError, match=message):
        synthesize_prod(tmp_path, **changes)
