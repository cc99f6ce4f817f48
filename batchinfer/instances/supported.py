"""The instance types SageMaker accepts for transform and processing jobs, and which of them
carry local NVMe storage.

The accepted types are botocore's own enumerations (``TransformInstanceType``,
``ProcessingInstanceType``) of the pinned boto3, so they move with it. A job on a type with
an instance store may not set ``VolumeKmsKeyId``: SageMaker refuses it, as the platform
encrypts that storage itself with a hardware module. Which families have an instance store
is a dated table (EC2's instance store volumes, as of :data:`AS_OF`).
"""

import difflib
from collections.abc import Iterable
from functools import cache

from batchinfer.errors import ValidationError

AS_OF = "2026-11"
LOCAL_STORAGE_FAMILIES = frozenset(
    {"c5d", "m5d", "r5d", "g4dn", "g5", "g6", "g6e", "g7e", "p3dn", "p4d", "p4de", "p5",
     "p5e", "p5en", "trn1", "trn1n"}
)  # fmt: skip
_ENUMS = {"transform": "TransformInstanceType", "processing": "ProcessingInstanceType"}
SHOWN = 3


@cache
def accepted(engine: str) -> tuple[str, ...]:
    """The instance types a job of ``engine`` may ask for."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for(_ENUMS[engine]).enum)


def instance_family(instance_type: str) -> str:
    """The family of an ``ml.<family>.<size>`` type (``ml.g5.xlarge``: ``g5``), else ""."""
    return instance_type.split(".")[1] if instance_type.count(".") == 2 else ""


def has_local_storage(instance_type: str) -> bool:
    """True for a type with an instance store (``ml.g5.xlarge``, ``ml.r5d.large``)."""
    return instance_family(instance_type) in LOCAL_STORAGE_FAMILIES


def check_instance_type(instance_type: str, engine: str) -> None:
    """Refuse a type SageMaker does not accept for ``engine``, naming the nearest ones."""
    types = accepted(engine)
    if instance_type in types:
        return
    raise ValidationError(
        f"instance_type (InstanceType): {instance_type!r} is not an instance type SageMaker "
        f"accepts for {engine} jobs; nearest: {', '.join(nearest(instance_type, types))}"
    )


def nearest(instance_type: str, types: Iterable[str]) -> list[str]:
    """The :data:`SHOWN` names in ``types`` closest to ``instance_type``."""
    return difflib.get_close_matches(instance_type, list(types), n=SHOWN, cutoff=0)
