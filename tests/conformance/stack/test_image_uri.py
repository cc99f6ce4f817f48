"""A stack configured with an existing image (``image_uri``): nothing is built, the model and
the jobs use that image, its URI is the stack's output, the jobs' role may pull it from its
repository, and cdk-nag stays clean."""

import json

import pytest
from cdk_nag import AwsSolutionsChecks

from .conftest import pipeline_functions, synthesize_prod

IMAGE = "210987654321.dkr.ecr.eu-west-1.amazonaws.com/team/scorer@sha256:" + "a" * 64


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("cdk.out")
    result = synthesize_prod(outdir, image_uri=IMAGE)
    assets = json.loads((outdir / f"{result.stack.stack_name}.assets.json").read_text())
    return result.app, result.stack, result.template_json, assets


def test_an_existing_image_is_used_and_nothing_is_built(synthesized):
    _, _, template, assets = synthesized
    assert assets.get("dockerImages", {}) == {}, "no image to build or push"
    (model,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Model"]
    assert model["Properties"]["PrimaryContainer"]["Image"] == IMAGE
    assert template["Outputs"]["ImageUri"]["Value"] == IMAGE
    variables = [f["Environment"]["Variables"] for f in pipeline_functions(template)]
    images = {v["BATCHINFER_IMAGE_URI"] for v in variables}
    assert images == {IMAGE}, "PrepareJob names it in processing jobs"


def test_the_jobs_may_pull_it_from_its_repository(synthesized):
    _, _, template, _ = synthesized
    pulls = [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Sid") == "PullImage"
    ]
    assert len(pulls) == 2, "the jobs' role and the split jobs' role"
    for pull in pulls:
        assert set(pull["Action"]) == {"ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"}
        assert pull["Resource"] == "arn:aws:ecr:eu-west-1:210987654321:repository/team/scorer"


def test_cdk_nag_is_clean_with_an_existing_image(synthesized):
    app, stack, _, _ = synthesized
    report = AwsSolutionsChecks(app).validate_scope(stack)
    assert [v.rule_name for v in report.violations] == []
