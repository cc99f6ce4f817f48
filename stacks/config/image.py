"""``image_uri`` and ``framework_image``: the image the jobs run when it is not built from
``containers/``."""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from batchinfer.errors import ValidationError
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
