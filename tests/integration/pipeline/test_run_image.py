"""A run's image follows its instance type: a stack with a CPU and a GPU build gives a GPU
run a model of its own on the GPU build (its transform jobs on the 535-driver AMI, its
processing jobs on that image), and refuses, at Plan, a type no build serves, naming the
type and the stack's images."""

from dataclasses import replace

import pytest

from batchinfer.errors import ValidationError
from batchinfer.instances.specs import SPECS, accelerator
from batchinfer.instances.supported import accepted
from batchinfer.pipeline.steps.prepare_job import prepare_job
from tests.support.run_state import example_plan, example_round

from .conftest import BUCKET
from .test_plan import plan

CPU_IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/cdk-assets:cpu"
GPU_IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/cdk-assets:gpu"
AMI = "al2-ami-sagemaker-batch-gpu-535"
INPUT = f"s3://{BUCKET}/input/d.csv"


@pytest.fixture
def builds(account):
    """A stack whose model runs the CPU build, with a GPU build beside it."""
    account.env = replace(
        account.env,
        image_uri=CPU_IMAGE,
        images={"cpu": CPU_IMAGE, "gpu": GPU_IMAGE},
        gpu_ami_version=AMI,
    )
    account.put("input/d.csv", b"1,2\n")
    return account


def test_every_accepted_type_has_an_accelerator_that_agrees_with_the_spec_table():
    for instance_type in {*accepted("transform"), *accepted("processing")}:
        spec = SPECS.get(instance_type)
        if spec is None:
            continue
        expected = (
            "cpu" if not spec.gpus else "neuron" if "Inferentia" in str(spec.gpu_model) else "gpu"
        )
        assert accelerator(instance_type) == expected, instance_type


def test_a_gpu_run_on_a_cpu_only_stack_is_refused_naming_the_type_and_the_image(builds):
    builds.env = replace(builds.env, images={"cpu": CPU_IMAGE}, gpu_ami_version="")
    with pytest.raises(ValidationError) as refused:
        plan(builds, {"input": INPUT, "instance_type": "ml.g5.xlarge"})
    message = str(refused.value)
    assert "ml.g5.xlarge is an NVIDIA GPU instance type" in message
    assert f"only a CPU build {CPU_IMAGE}" in message
    assert "image_build.gpu: true" in message
    assert builds.table.get_run("exec-1") is None, "refused before the run is claimed"
    assert builds.sagemaker.list_models()["Models"] == []


def test_an_inferentia_run_is_refused_on_any_build(builds):
    with pytest.raises(ValidationError, match=r"ml.inf2.xlarge is an AWS Neuron instance type"):
        plan(builds, {"input": INPUT, "instance_type": "ml.inf2.xlarge"})


def test_a_gpu_run_gets_the_stacks_model_data_on_the_gpu_build(builds):
    result = plan(builds, {"input": INPUT, "instance_type": "ml.g5.xlarge"})
    assert result["model_name"] == "bi-test-exec-1-model"
    container = builds.sagemaker.describe_model(ModelName=result["model_name"])["PrimaryContainer"]
    assert container["Image"] == GPU_IMAGE
    assert container["ModelDataUrl"] == builds.env.model_data_url


def test_a_cpu_run_uses_the_stacks_model(builds):
    result = plan(builds, {"input": INPUT, "instance_type": "ml.c5.xlarge"})
    assert result["model_name"] is None
    assert builds.sagemaker.list_models()["Models"] == []


def test_a_runs_own_model_data_takes_the_build_of_its_type(builds):
    data = "s3://models/other/model.tar.gz"
    builds.env = replace(builds.env, model_sources=("s3://models/",))
    result = plan(builds, {"input": INPUT, "instance_type": "ml.g6.xlarge", "model_data": data})
    container = builds.sagemaker.describe_model(ModelName=result["model_name"])["PrimaryContainer"]
    assert (container["Image"], container["ModelDataUrl"]) == (GPU_IMAGE, data)


def test_an_existing_model_cannot_be_moved_to_another_build(builds):
    builds.env = replace(builds.env, model_data_url="")
    with pytest.raises(
        ValidationError,
        match=rf"a run on ml.g5.xlarge needs the image {GPU_IMAGE}, but the stack's model "
        rf"row-sum runs {CPU_IMAGE}.*name model_data for the run",
    ):
        plan(builds, {"input": INPUT, "instance_type": "ml.g5.xlarge"})


@pytest.mark.parametrize(("instance_type", "ami"), [("ml.g5.xlarge", AMI), ("ml.m5.xlarge", None)])
def test_transform_jobs_on_gpu_types_ask_for_the_drivers_the_build_needs(
    builds, instance_type, ami
):
    plan_ = example_plan(instance_type=instance_type)
    request = prepare_job(plan_, example_round(), env=builds.env, s3=builds.s3).request
    assert request["TransformResources"].get("TransformAmiVersion") == ami


def test_a_configured_image_uri_serves_every_type_without_an_ami(account):
    request = prepare_job(
        example_plan(instance_type="ml.g5.xlarge"), example_round(), env=account.env, s3=account.s3
    ).request
    assert "TransformAmiVersion" not in request["TransformResources"]
    processing = example_plan("processing", instance_type="ml.g5.xlarge")
    job = prepare_job(processing, example_round(), env=account.env, s3=account.s3).request
    assert job["AppSpecification"]["ImageUri"] == account.env.image_uri


@pytest.mark.parametrize(
    ("instance_type", "image"), [("ml.g4dn.xlarge", GPU_IMAGE), ("ml.c5.xlarge", CPU_IMAGE)]
)
def test_processing_jobs_run_the_build_of_their_type(builds, instance_type, image):
    processing = example_plan("processing", instance_type=instance_type)
    request = prepare_job(processing, example_round(), env=builds.env, s3=builds.s3).request
    assert request["AppSpecification"]["ImageUri"] == image
