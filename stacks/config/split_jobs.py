"""``split_job_threshold`` and ``split_instance_type``: large objects split by a Processing
job instead of the split Lambda."""

from typing import TYPE_CHECKING

from batchinfer.errors import ValidationError
from batchinfer.instances.supported import check_instance_type
from batchinfer.units import parse_size

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig


def check_split_jobs(config: "PipelineConfig", where: str) -> None:
    """Split jobs run batchinfer's image: a framework image has no ``batchinfer split``."""
    if config.split_job_threshold in (None, "off"):
        return
    field_name = f"{where}.split_job_threshold"
    if not isinstance(config.split_job_threshold, str):
        raise ValidationError(f"{field_name}: {config.split_job_threshold!r} is not a size")
    parse_size(config.split_job_threshold, field=field_name)
    try:
        check_instance_type(config.split_instance_type, "processing")
    except ValidationError as exc:
        raise ValidationError(f"{where}.split_instance_type: {exc}") from None
