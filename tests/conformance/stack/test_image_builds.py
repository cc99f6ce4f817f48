"""The builds of batchinfer's image (``image_build``): with torch, a CPU build carrying torch's
CPU wheels and a CUDA build beside it, each an image asset with its Dockerfile arguments; the
model runs the default type's build; the pipeline knows both, and the GPU build's driver AMI;
split jobs run the CPU build. AWS's PyTorch image is resolved for CPU and GPU types alike.
Builds that cannot serve the stack's default type are refused at synth."""

import json

import pytest
from cdk_nag import AwsSolutionsChecks

from batchinfer.errors import ValidationError
from stacks.image_builds import CUDA_BASE, GPU_AMI_VERSION, TORCH_CPU_INDEX, TORCH_CUDA_INDEX

from .conftest import pipeline_environment, pipeline_functions, synthesize_prod


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("cdk.out")
    result = synthesize_prod(outdir, image_build={"torch": True, "gpu": True})
    assets = json.loads((outdir / f"{result.stack.stack_name}.assets.json").read_text())
    return result, assets["dockerImages"]


def _variables(template):
    return pipeline_functions(template)[0]["Environment"]["Variables"]


def test_a_cpu_and_a_cuda_build_are_image_assets_with_their_arguments(synthesized):
    _, images = synthesized
    arguments = sorted(
        (image["source"].get("dockerBuildArgs", {}) for image in images.values()),
        key=lambda a: a["DEEP_LEARNING"],
    )
    assert arguments == [
        {"DEEP_LEARNING": "cpu", "TORCH_INDEX_URL": TORCH_CPU_INDEX},
        {"BASE_IMAGE": CUDA_BASE, "DEEP_LEARNING": "gpu", "TORCH_INDEX_URL": TORCH_CUDA_INDEX},
    ]
    assert {image["source"]["dockerFile"] for image in images.values()} == {
        "containers/inference/Dockerfile"
    }


def test_the_model_runs_the_cpu_build_and_the_pipeline_knows_both(synthesized):
    result, images = synthesized
    template = result.template_json
    by_build = {
        image["source"]["dockerBuildArgs"]["DEEP_LEARNING"]: digest
        for digest, image in images.items()
    }
    (model,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Model"]
    assert by_build["cpu"] in json.dumps(model["Properties"]["PrimaryContainer"]["Image"])
    variables = _variables(template)
    known = json.dumps(variables["BATCHINFER_IMAGES"])
    assert '\\"cpu\\"' in known and by_build["cpu"] in known
    assert '\\"gpu\\"' in known and by_build["gpu"] in known
    assert variables["BATCHINFER_GPU_AMI_VERSION"] == GPU_AMI_VERSION
    (split,) = [
        state
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
        for state in [json.dumps(resource["Properties"]["DefinitionString"])]
        if "SplitWithJob" in state
    ]
    assert by_build["cpu"] in split and by_build["gpu"] not in split


def test_cdk_nag_is_clean_with_two_builds(synthesized):
    result, _ = synthesized
    report = AwsSolutionsChecks(result.app).validate_scope(result.stack)
    assert [v.rule_name for v in report.violations] == []


def test_the_pytorch_image_is_resolved_for_cpu_and_gpu_types(tmp_path):
    result = synthesize_prod(
        tmp_path, framework_image={"framework": "pytorch", "version": "2.5", "py_version": "py311"}
    )
    env = pipeline_environment(result.template_json, table_name="runs", data_bucket="data")
    registry = "763104351884.dkr.ecr.eu-west-1.amazonaws.com/pytorch-inference"
    assert env.images == {"cpu": f"{registry}:2.5-cpu-py311", "gpu": f"{registry}:2.5-gpu-py311"}
    assert env.image_uri == env.images["cpu"], "the default type, ml.c5.2xlarge, is a CPU type"
    assert env.gpu_ami_version == "", "AWS's images bring their own CUDA setup"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"image_build": {"torch": True}, "transform_instance_type": "ml.g5.xlarge"},
            r"environments\.prod\.transform\.instance_type: 'ml\.g5\.xlarge' is not allowed; "
            r"allowed: a CPU type, or image_build\.gpu: true",
        ),
        (
            {
                "image_build": {"torch": True, "gpu": True},
                "transform_instance_type": "ml.inf2.xlarge",
            },
            r"transform\.instance_type: 'ml\.inf2\.xlarge' is not allowed; allowed: a CPU or "
            r"NVIDIA GPU type \(no image is made for AWS Neuron\)",
        ),
        (
            {
                "framework_image": {
                    "framework": "pytorch",
                    "version": "2.5",
                    "py_version": "py311",
                },
                "transform_instance_type": "ml.inf2.xlarge",
            },
            r"transform\.instance_type: 'ml\.inf2\.xlarge' is not allowed",
        ),
        (
            {"image_build": {"gpu": True}},
            r"image_build\.torch: False is not allowed; allowed: true with gpu: true",
        ),
        ({"image_build": {"cuda": True}}, r"image_build.*cuda"),
        (
            {
                "image_build": {"torch": True},
                "image_uri": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/x:1",
            },
            r"image_build: builds batchinfer's image from containers/; this environment names "
            r"image_uri or framework_image instead",
        ),
    ],
)
def test_builds_that_cannot_serve_the_stack_are_refused_at_synth(tmp_path, changes, message):
    if instance_type := changes.pop("transform_instance_type", None):
        changes["transform"] = {"content_type": "text/csv", "instance_type": instance_type}
    with pytest.raises(ValidationError, match=message):
        synthesize_prod(tmp_path, **changes)
