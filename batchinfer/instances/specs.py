"""vCPUs, memory and GPUs of the ml.* instance types batch jobs commonly run on.

A dated table (AWS's published specifications of the EC2 instances behind each ml.* type,
as of :data:`AS_OF`; g6, g6e and inf2 as of :data:`ACCELERATED_AS_OF`, from the
instances.vantage.sh data of that date checked against SkyPilot's AWS catalogue) of the
general purpose (m5, m6i), compute optimised (c5, c6i), memory optimised (r5), GPU (g4dn,
g5, g6, g6e, p3) and Inferentia2 (inf2, its chips counted as ``gpus``) families that
SageMaker offers for transform or processing jobs (p4d and p5 are offered for neither).
Which types a job may ask for is :mod:`instance_types` (botocore's enumerations); this table
only describes them.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from batchinfer.errors import ValidationError
from batchinfer.instances.supported import instance_family, nearest

AS_OF = "2024-06"
ACCELERATED_AS_OF = "2026-01"


@dataclass(frozen=True)
class InstanceSpec:
    vcpus: int
    memory_gib: float
    gpus: int = 0
    gpu_model: str | None = None


def _family(sizes: Mapping[str, tuple[int, float]], family: str) -> dict[str, InstanceSpec]:
    return {f"ml.{family}.{size}": InstanceSpec(c, m) for size, (c, m) in sizes.items()}


def _gpu_family(
    sizes: Mapping[str, tuple[int, float, int]], family: str, model: str
) -> dict[str, InstanceSpec]:
    return {
        f"ml.{family}.{size}": InstanceSpec(c, m, g, model) for size, (c, m, g) in sizes.items()
    }


# size -> (vCPUs, memory GiB)
_GENERAL = {"large": (2, 8), "xlarge": (4, 16), "2xlarge": (8, 32), "4xlarge": (16, 64),
            "8xlarge": (32, 128), "12xlarge": (48, 192), "16xlarge": (64, 256),
            "24xlarge": (96, 384), "32xlarge": (128, 512)}  # fmt: skip
_M5 = {size: _GENERAL[size] for size in ("large", "xlarge", "2xlarge", "4xlarge", "12xlarge",
                                         "24xlarge")}  # fmt: skip
_C5 = {"xlarge": (4, 8), "2xlarge": (8, 16), "4xlarge": (16, 32),
       "9xlarge": (36, 72), "18xlarge": (72, 144)}  # fmt: skip
_C6I = {"large": (2, 4), "xlarge": (4, 8), "2xlarge": (8, 16), "4xlarge": (16, 32),
        "8xlarge": (32, 64), "12xlarge": (48, 96), "16xlarge": (64, 128), "24xlarge": (96, 192),
        "32xlarge": (128, 256)}  # fmt: skip
_R5 = {"large": (2, 16), "xlarge": (4, 32), "2xlarge": (8, 64), "4xlarge": (16, 128),
       "8xlarge": (32, 256), "12xlarge": (48, 384), "16xlarge": (64, 512),
       "24xlarge": (96, 768)}  # fmt: skip
# size -> (vCPUs, memory GiB, GPUs)
_G4DN = {"xlarge": (4, 16, 1), "2xlarge": (8, 32, 1), "4xlarge": (16, 64, 1),
         "8xlarge": (32, 128, 1), "12xlarge": (48, 192, 4), "16xlarge": (64, 256, 1)}  # fmt: skip
_G5 = {"xlarge": (4, 16, 1), "2xlarge": (8, 32, 1), "4xlarge": (16, 64, 1),
       "8xlarge": (32, 128, 1), "12xlarge": (48, 192, 4), "16xlarge": (64, 256, 1),
       "24xlarge": (96, 384, 4), "48xlarge": (192, 768, 8)}  # fmt: skip
_P3 = {"2xlarge": (8, 61, 1), "8xlarge": (32, 244, 4), "16xlarge": (64, 488, 8)}
_G6 = {"xlarge": (4, 16, 1), "2xlarge": (8, 32, 1), "4xlarge": (16, 64, 1),
       "8xlarge": (32, 128, 1), "12xlarge": (48, 192, 4), "16xlarge": (64, 256, 1),
       "24xlarge": (96, 384, 4), "48xlarge": (192, 768, 8)}  # fmt: skip
_G6E = {"xlarge": (4, 32, 1), "2xlarge": (8, 64, 1), "4xlarge": (16, 128, 1),
        "8xlarge": (32, 256, 1), "12xlarge": (48, 384, 4), "16xlarge": (64, 512, 1),
        "24xlarge": (96, 768, 4), "48xlarge": (192, 1536, 8)}  # fmt: skip
_INF2 = {"xlarge": (4, 16, 1), "8xlarge": (32, 128, 1), "24xlarge": (96, 384, 6),
         "48xlarge": (192, 768, 12)}  # fmt: skip

SPECS: dict[str, InstanceSpec] = {
    **_family(_M5, "m5"),
    **_family(_GENERAL, "m6i"),
    **_family(_C5, "c5"),
    **_family(_C6I, "c6i"),
    **_family(_R5, "r5"),
    **_gpu_family(_G4DN, "g4dn", "NVIDIA T4"),
    **_gpu_family(_G5, "g5", "NVIDIA A10G"),
    **_gpu_family(_P3, "p3", "NVIDIA V100"),
    **_gpu_family(_G6, "g6", "NVIDIA L4"),
    **_gpu_family(_G6E, "g6e", "NVIDIA L40S"),
    **_gpu_family(_INF2, "inf2", "AWS Inferentia2"),
}


# What runs a model on each family's accelerators: NVIDIA GPUs (g*, p*) take CUDA builds,
# Inferentia and Trainium (inf*, trn*) the Neuron SDK; every other family is CPUs alone.
ACCELERATORS = {"g": "gpu", "p": "gpu", "inf": "neuron", "trn": "neuron"}


def accelerator(instance_type: str) -> str:
    """``"gpu"``, ``"neuron"`` or ``"cpu"``: what ``instance_type``'s family computes with,
    from its name (``ml.g5.xlarge``: gpu), so any type botocore accepts has an answer."""
    family = instance_family(instance_type)
    for prefix in sorted(ACCELERATORS, key=len, reverse=True):
        if family.startswith(prefix) and family[len(prefix) :][:1].isdigit():
            return ACCELERATORS[prefix]
    return "cpu"


def instance_spec(instance_type: str) -> InstanceSpec:
    """The vCPUs, memory and GPUs of ``instance_type``; a type the table does not hold is a
    ValidationError naming the nearest types it does."""
    spec = SPECS.get(instance_type)
    if spec is None:
        raise ValidationError(
            f"instance_type (InstanceType): {instance_type!r} is not in batchinfer's table of "
            f"instance specifications (as of {AS_OF}); nearest: "
            f"{', '.join(nearest(instance_type, SPECS))}"
        )
    return spec
