"""The S3 places a stack's runs may read inputs from and write outputs to.

Inputs come from the stack's data bucket under ``input/`` or from an existing bucket (and
prefix) the stack's configuration names as a data source; outputs go to the data bucket
under ``output/`` or to a configured output destination. Each place may carry the ARN of
the customer managed KMS key its bucket encrypts with.

A configuration names a place in a request by reference, ``bucket://NAME/KEY``: the key
``KEY`` of the bucket that place ``NAME`` is in (``data``: the stack's data bucket, whose
name CloudFormation generates), resolved when the stack is synthesized.
"""

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from batchinfer.errors import ValidationError
from batchinfer.uris import S3Location, parse_s3_uri

DATA = "data"  # the stack's own data bucket
REFERENCE = re.compile(r"bucket://(?P<name>[^/]+)/(?P<key>.*)")


@dataclass(frozen=True)
class DataPlace:
    """``s3://<bucket>/<prefix>`` under a name; ``kms_key_arn`` is empty when the bucket
    encrypts with an AWS managed key (or the stack's key, for the data bucket)."""

    name: str
    bucket: str
    prefix: str = ""
    kms_key_arn: str = ""

    @property
    def location(self) -> S3Location:
        return S3Location(self.bucket, self.prefix)

    def holds(self, location: S3Location) -> bool:
        return location.bucket == self.bucket and location.key.startswith(self.prefix)

    def describe(self) -> str:
        return f"{self.location.uri} ({self.name})"


def with_data_bucket(
    prefix: str, data_bucket: str, configured: Iterable[DataPlace], kms_key_arn: str = ""
) -> tuple[DataPlace, ...]:
    """The data bucket's ``prefix`` (as place ``data``), then the ``configured`` places."""
    return (DataPlace(DATA, data_bucket, prefix, kms_key_arn), *configured)


def to_json(places: Iterable[DataPlace]) -> str:
    return json.dumps([asdict(p) for p in places], sort_keys=True)


def from_json(text: str) -> tuple[DataPlace, ...]:
    return tuple(DataPlace(**item) for item in json.loads(text))


def place_of(uri: object, field: str, places: tuple[DataPlace, ...]) -> DataPlace:
    """The place that holds ``uri``; refuse a URI outside them all, listing them."""
    allowed = ", ".join(p.describe() for p in places)
    if not isinstance(uri, str):
        raise ValidationError(f"{field}: required, an s3:// URI under one of: {allowed}")
    location = parse_s3_uri(uri, field=field)
    for place in places:
        if place.holds(location):
            return place
    raise ValidationError(
        f"{field}: {uri!r} is outside the places this stack's runs may use for it: {allowed}"
    )


def resolve(value: str, field: str, places: tuple[DataPlace, ...]) -> str:
    """``value`` as an ``s3://`` URI: a ``bucket://NAME/KEY`` reference resolved by the
    place named NAME, an ``s3://`` URI as it is; it must lie inside one of ``places``."""
    match = REFERENCE.fullmatch(value)
    if match is not None:
        named = {p.name: p for p in places}
        place = named.get(match["name"])
        if place is None:
            raise ValidationError(
                f"{field}: {value!r} names no place; known for {field}: {', '.join(named)}"
            )
        value = S3Location(place.bucket, match["key"]).uri
    place_of(value, field, places)
    return value
