"""``image_uri`` and ``framework_image``: the image the jobs run when it is not built from
``containers/``; ``image_build``: which builds of that image a stack deploys."""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from batchinfer.errors import ValidationError
from batchinfer.instances.specs import accelerator
from stacks.config.checks import known_keys, require
from stacks.framework_images import FRAMEWORKS

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig

ECR_IMAGE = re.compile(
    r"(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/"
    r"(?P<repository>[a-z0-9][a-z0-9._/-]*)(:[\w.-]{1,128}|@sha256:[a-f0-9]{64})"
)


@dataclass(frozen=True)
class FrameworkImageConfig:
    """One of AWS's framework inference images, e.g. ``{"framework": "sklearn", "version":
    "1.2-1"}`` (``py_version`` where the framework has several, e.g. ``py310``)."""

    framework: str
    version: str
    py_version: str | None = None


@dataclass(frozen=True)
class ImageBuildConfig:
    """The builds of batchinfer's image: with torch and ONNX Runtime for ``model.pt`` and
    ``model.onnx`` (``torch``), and a CUDA build beside the CPU one for GPU types (``gpu``,
    which needs ``torch``). Without either: the one CPU image, for tabular models."""

    torch: bool = False
    gpu: bool = False


def parse_image_build(raw: Any, where: str) -> ImageBuildConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object with torch and gpu")
    values = known_keys(raw, ImageBuildConfig, where)
    for key, value in values.items():
        require(isinstance(value, bool), f"{where}.{key}", value, "true or false")
    build = ImageBuildConfig(**values)
    require(
        build.torch or not build.gpu,
        f"{where}.torch",
        build.torch,
        "true with gpu: true (the GPU build serves torch and ONNX models)",
    )
    return build


def parse_framework_image(raw: Any, where: str) -> FrameworkImageConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object with framework and version")
    values = known_keys(raw, FrameworkImageConfig, where)
    for key in ("framework", "version"):
        if not isinstance(values.get(key), str):
            raise ValidationError(f"{where}.{key}: required, a string")
    image = FrameworkImageConfig(**values)
    require(
        image.framework in FRAMEWORKS, f"{where}.framework", image.framework, ", ".join(FRAMEWORKS)
    )
    return image


def check_image(config: "PipelineConfig", where: str) -> None:
    """An ``image_uri`` is an ECR image with a tag or digest. A framework image needs a
    pinned region (its registry differs per region), no ``image_uri`` beside it, and the
    transform engine."""
    if config.image_uri is not None:
        require(
            isinstance(config.image_uri, str) and ECR_IMAGE.fullmatch(config.image_uri),
            f"{where}.image_uri",
            config.image_uri,
            "an ECR image URI with a tag or digest, "
            "<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>",
        )
    if config.image_build != ImageBuildConfig() and (config.image_uri or config.framework_image):
        raise ValidationError(
            f"{where}.image_build: builds batchinfer's image from containers/; this environment "
            "names image_uri or framework_image instead"
        )
    if config.image_uri is None:  # the default type needs an image of its accelerator
        gpus = config.framework_image is not None or config.image_build.gpu
        require(
            accelerator(config.settings.instance_type) in (("cpu", "gpu") if gpus else ("cpu",)),
            f"{where}.transform.instance_type",
            config.settings.instance_type,
            "a CPU or NVIDIA GPU type (no image is made for AWS Neuron)"
            if gpus
            else "a CPU type, or image_build.gpu: true (the image is built for CPUs alone)",
        )
    if config.framework_image is None:
        return
    if config.image_uri is not None:
        raise ValidationError(f"{where}: give image_uri or framework_image, not both")
    require(
        config.region is not None,
        f"{where}.region",
        None,
        "a region: framework images are resolved for it at synth",
    )
    require(
        config.engine == "transform",
        f"{where}.engine",
        config.engine,
        "transform with framework_image (processing jobs need batchinfer's image)",
    )
