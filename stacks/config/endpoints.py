"""``endpoints`` and ``endpoint_concurrency``: existing real-time endpoints that runs of the
endpoint engine score with."""

from typing import TYPE_CHECKING, Any

from batchinfer.endpoints.targets import EndpointTarget
from stacks.config.checks import as_list, int_range, require, require_unique

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig


def parse_endpoints(raw: Any, where: str) -> tuple[EndpointTarget, ...]:
    return tuple(
        EndpointTarget.from_json(item, f"{where}[{i}]")
        for i, item in enumerate(as_list(raw, where))
    )


def check_endpoints(config: "PipelineConfig", where: str) -> None:
    """Unique names, at least one for the endpoint engine, a Map concurrency in range."""
    require_unique((e.name for e in config.endpoints), f"{where}.endpoints")
    require(
        config.engine != "endpoint" or config.endpoints,
        f"{where}.endpoints",
        [],
        "at least one endpoint with engine endpoint",
    )
    int_range(config.endpoint_concurrency, 1, 1000, f"{where}.endpoint_concurrency")
