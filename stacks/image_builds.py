"""The images a stack's jobs run, one per accelerator they serve ("cpu", "gpu";
``batchinfer.pipeline.jobs.run_image`` picks a run's by its instance type).

batchinfer's image is built from ``containers/inference/Dockerfile``: plain, or with torch
and ONNX Runtime (``image_build.torch``: torch's CPU build), and with ``image_build.gpu`` a
second build on a CUDA base with torch for CUDA 12.6. SageMaker's batch GPU hosts run NVIDIA
driver 470 (CUDA 11.4) unless a transform job asks for the 535 AMI (CUDA 12.2; 12.6 runs on
it by CUDA's minor-version compatibility), so the GPU build's transform jobs ask for it. AWS's
framework images are resolved per accelerator by the SageMaker SDK (stacks.framework_images).
"""

from stacks.config.image import ImageBuildConfig

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_CUDA_INDEX = "https://download.pytorch.org/whl/cu126"
CUDA_BASE = "nvidia/cuda:12.6.3-base-ubuntu24.04"
GPU_AMI_VERSION = "al2-ami-sagemaker-batch-gpu-535"
# The instance type a framework image is resolved for, per accelerator, when the stack's
# default type is of another.
REPRESENTATIVE_TYPES = {"cpu": "ml.m5.xlarge", "gpu": "ml.g5.xlarge"}


def build_arguments(build: ImageBuildConfig) -> dict[str, dict[str, str]]:
    """The Dockerfile's build arguments for each accelerator ``build`` serves."""
    cpu = {"DEEP_LEARNING": "cpu", "TORCH_INDEX_URL": TORCH_CPU_INDEX} if build.torch else {}
    builds = {"cpu": cpu}
    if build.gpu:
        builds["gpu"] = {
            "BASE_IMAGE": CUDA_BASE,
            "DEEP_LEARNING": "gpu",
            "TORCH_INDEX_URL": TORCH_CUDA_INDEX,
        }
    return builds
