"""For the endpoint engine: how many InvokeEndpoint requests a run sends, and how long they
take at the stack's concurrency (``endpoint_concurrency`` ScoreShard Lambdas, each keeping
MaxConcurrentTransforms requests in flight; the payload limit is spec C8: a real-time request
holds at most 6 MB and takes at most 60 s)."""

import math
from dataclasses import dataclass
from typing import Any

from batchinfer.endpoints.scoring import endpoint_settings
from batchinfer.planning.estimate import Throughput, Unit
from batchinfer.transform.settings import EffectiveSettings, TransformSettings


@dataclass(frozen=True)
class EndpointEstimate:
    requests: int | None  # None: SingleRecord over inputs whose records were not counted
    in_flight: int  # requests at once: min(shards, Lambdas) x MaxConcurrentTransforms
    seconds: float | None  # None without a measured throughput
    assumptions: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "requests_in_flight": self.in_flight,
            "seconds": self.seconds,
            "assumptions": self.assumptions,
        }


def requests_of(unit: Unit, settings: TransformSettings) -> int | None:
    """The requests one shard takes: one per record (SingleRecord), one per object
    (SplitType None), else batches filled up to MaxPayloadInMB (at least that many)."""
    return _requests(unit, settings.split_type, endpoint_settings(settings))


def _requests(unit: Unit, split_type: str, effective: EffectiveSettings) -> int | None:
    if split_type != "Line":
        return 1
    if effective.batch_strategy == "SingleRecord":
        return None if unit.records is None else math.ceil(unit.records)
    limit = effective.max_payload_bytes
    assert limit is not None, "endpoint_settings refuses MaxPayloadInMB 0"
    return max(1, math.ceil(unit.bytes / limit)) if unit.bytes else 0


def endpoint_estimate(
    units: list[Unit],
    settings: TransformSettings,
    *,
    concurrency: int,
    throughput: Throughput | None,
) -> EndpointEstimate:
    """Requests and time of ``units`` (the shards) through an endpoint, ``concurrency``
    ScoreShard Lambdas at once."""
    effective = endpoint_settings(settings)
    per_shard = [_requests(u, settings.split_type, effective) for u in units]
    requests = None if None in per_shard else sum(r or 0 for r in per_shard)
    mct = effective.max_concurrent_transforms
    in_flight = max(1, min(concurrency, len(units))) * max(1, mct)
    assumptions = [
        f"the endpoint serves {in_flight} requests at once as fast as one CPU of the "
        "measurement serves one (its instances, not batchinfer, bound the rate)",
        "each shard is long enough to keep MaxConcurrentTransforms requests in flight",
    ]
    seconds = None
    if throughput is not None:
        per_request_stream = (
            throughput.rows_per_second / throughput.busy_cpus
            if throughput.rows_per_second is not None and all(u.records is not None for u in units)
            else None
        )
        if per_request_stream is not None:
            seconds = sum(u.records or 0 for u in units) / (per_request_stream * in_flight)
        else:
            speed = throughput.bytes_per_second / throughput.busy_cpus
            seconds = sum(u.bytes for u in units) / (speed * in_flight)
        assumptions.append(f"the measured speed holds ({throughput.source})")
    return EndpointEstimate(requests, in_flight, seconds, assumptions)
