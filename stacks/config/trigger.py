"""``s3_trigger``: runs started by objects arriving under a prefix of an input place."""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.data_places import DATA
from stacks.config.checks import known_keys, require
from stacks.config.places import DATA_BUCKET_PLACEHOLDER

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig

# S3 URL-encodes the keys of its events; the trigger's rule matches the prefix as encoded,
# so it may only hold characters that no encoding changes.
_TRIGGER_PREFIX = re.compile(r"([A-Za-z0-9_.-]+/)+")
# The request keys the S3 trigger fills in itself for each run.
TRIGGER_SETS = frozenset({"input", "names", "run_id"})


@dataclass(frozen=True)
class S3TriggerConfig:
    """Start runs for the objects created under the key ``prefix`` of the bucket of data
    source ``source`` (``data``: the stack's data bucket): the arrivals of up to
    ``batch_window_seconds`` are gathered and each folder's become one run, whose ``input``
    is the folder and ``names`` its new objects; ``request`` holds the other request keys."""

    prefix: str
    request: Mapping[str, Any] = field(default_factory=dict)
    source: str = DATA
    batch_window_seconds: int = 60


def parse_s3_trigger(raw: Any, where: str) -> S3TriggerConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where}: expected an object with prefix and request")
    values = known_keys(raw, S3TriggerConfig, where)
    if "prefix" not in values:
        raise ValidationError(f"{where}.prefix: required")
    trigger = S3TriggerConfig(**values)
    require(
        isinstance(trigger.prefix, str) and _TRIGGER_PREFIX.fullmatch(trigger.prefix),
        f"{where}.prefix",
        trigger.prefix,
        "a key prefix ending with '/' of letters, digits, '_', '.' and '-' (S3 URL-encodes "
        "other characters in its events' keys, where the rule would not find the prefix), "
        "e.g. input/arrivals/",
    )
    require(
        isinstance(trigger.request, Mapping) and not set(trigger.request) & TRIGGER_SETS,
        f"{where}.request",
        trigger.request,
        "an object of request keys without 'input', 'names' or 'run_id' (the trigger sets "
        "the arrivals' folder, their names and a run id per run)",
    )
    window = trigger.batch_window_seconds
    require(
        isinstance(window, int) and not isinstance(window, bool) and 1 <= window <= 300,
        f"{where}.batch_window_seconds",
        window,
        "an integer 1..300 (the event source mapping's MaximumBatchingWindowInSeconds)",
    )
    return trigger


def check_trigger(config: "PipelineConfig", trigger: S3TriggerConfig, where: str) -> None:
    """The trigger watches a prefix inside one of the input places; its request's output
    reference resolves."""
    places = {p.name: p for p in config.input_places(DATA_BUCKET_PLACEHOLDER)}
    require(trigger.source in places, f"{where}.source", trigger.source, ", ".join(places))
    place = places[trigger.source]
    require(
        trigger.prefix.startswith(place.prefix),
        f"{where}.prefix",
        trigger.prefix,
        f"a key prefix under {place.prefix!r}, the prefix of {trigger.source!r}",
    )
    config.resolve_request(trigger.request, DATA_BUCKET_PLACEHOLDER, f"{where}.request")
