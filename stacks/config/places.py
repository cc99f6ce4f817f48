"""``data_sources`` and ``output_destinations``: existing buckets (and prefixes) runs may
read inputs from and write outputs to, named in requests as ``bucket://NAME/KEY``."""

import re
from collections.abc import Mapping
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.pipeline.contract.data_places import DATA, DataPlace
from stacks.config.checks import as_list, known_keys, require, require_unique

# Stands for the data bucket's name, which CloudFormation generates, when checking requests.
DATA_BUCKET_PLACEHOLDER = "<data bucket>"

_PREFIX = re.compile(r"([A-Za-z0-9!_.*'()-]+/)+")
_PLACE_NAME = re.compile(r"[a-z][a-z0-9-]{0,62}")
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_KMS_KEY_ARN = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+")


def parse_places(raw: Any, where: str) -> tuple[DataPlace, ...]:
    """Existing buckets: ``name`` (used in references), ``bucket``, optional ``prefix`` and
    the ARN of the customer managed key the bucket encrypts with."""
    places = []
    for i, item in enumerate(as_list(raw, where)):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise ValidationError(f"{at}: expected an object with name and bucket")
        values = known_keys(item, DataPlace, at)
        for key in ("name", "bucket"):
            if key not in values:
                raise ValidationError(f"{at}.{key}: required")
        place = DataPlace(**values)
        require(
            isinstance(place.name, str)
            and _PLACE_NAME.fullmatch(place.name)
            and place.name != DATA,
            f"{at}.name",
            place.name,
            f"lowercase letters, digits and hyphens, starting with a letter; not {DATA!r} "
            "(the stack's data bucket)",
        )
        require(
            isinstance(place.bucket, str) and _BUCKET.fullmatch(place.bucket),
            f"{at}.bucket",
            place.bucket,
            "an S3 bucket name",
        )
        require(
            place.prefix == ""
            or (isinstance(place.prefix, str) and _PREFIX.fullmatch(place.prefix)),
            f"{at}.prefix",
            place.prefix,
            "empty (the whole bucket) or a key prefix ending with '/'",
        )
        require(
            place.kms_key_arn == ""
            or (isinstance(place.kms_key_arn, str) and _KMS_KEY_ARN.fullmatch(place.kms_key_arn)),
            f"{at}.kms_key_arn",
            place.kms_key_arn,
            "the ARN of a KMS key, arn:aws:kms:<region>:<account>:key/<id>",
        )
        places.append(place)
    require_unique((p.name for p in places), where)
    return tuple(places)
