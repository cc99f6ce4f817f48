"""Which of the stack's images a run's jobs use: the build for its instance type's
accelerator (``instances.specs.accelerator``).

A stack whose image is built from ``containers/`` with a GPU variant, or that runs one of
AWS's framework images, has an image per accelerator (``PipelineEnvironment.images``). A run
on a type no build serves (a GPU type on a stack built for CPUs alone, an Inferentia type on
any) is refused at Plan, naming the type and the images the stack has. A stack given one
``image_uri`` runs it on every type.
"""

from batchinfer.errors import ValidationError
from batchinfer.instances.specs import accelerator
from batchinfer.pipeline.contract.environment import PipelineEnvironment

ACCELERATOR_NAMES = {"cpu": "a CPU", "gpu": "an NVIDIA GPU", "neuron": "an AWS Neuron"}


def run_image(instance_type: str, env: PipelineEnvironment) -> str:
    """The image the jobs of a run on ``instance_type`` run."""
    if not env.images:
        return env.image_uri
    kind = accelerator(instance_type)
    image = env.images.get(kind)
    if image is None:
        built = "; ".join(f"{ACCELERATOR_NAMES[k]} build {uri}" for k, uri in env.images.items())
        raise ValidationError(
            f"instance_type (InstanceType): {instance_type} is {ACCELERATOR_NAMES[kind]} "
            f"instance type, and this stack's image has no build for it, only {built}. "
            "Choose a type one of them serves"
            + (", or deploy the stack with image_build.gpu: true" if kind == "gpu" else "")
        )
    return image


def transform_ami_version(instance_type: str, env: PipelineEnvironment) -> str:
    """The TransformAmiVersion a transform job on ``instance_type`` asks for ("": the
    platform's default): the GPU build's driver on GPU types."""
    return env.gpu_ami_version if accelerator(instance_type) == "gpu" else ""
