"""S3 URIs as CreateTransformJob accepts them (spec R1: a request outside CreateTransformJob's
limits is refused), and joining of keys."""

import re
from dataclasses import dataclass

from batchinfer.errors import ValidationError

# The S3Uri pattern of the SageMaker API model (R1).
_S3_URI = re.compile(r"^(https|s3)://([^/]+)/?(.*)$")
MAX_S3_URI_LENGTH = 1024


@dataclass(frozen=True)
class S3Location:
    bucket: str
    key: str

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def child(self, name: str) -> "S3Location":
        """The location ``name`` below this one, treating this key as a folder."""
        prefix = self.key if not self.key or self.key.endswith("/") else self.key + "/"
        return S3Location(self.bucket, prefix + name)


def is_s3_uri(text: str) -> bool:
    return text.startswith("s3://")


def parse_s3_uri(uri: str, *, field: str = "S3Uri") -> S3Location:
    """Split ``s3://bucket/key`` into bucket and key, with an error naming ``field``."""
    if len(uri) > MAX_S3_URI_LENGTH:
        raise ValidationError(f"{field}: URI is {len(uri)} characters, the limit is 1024")
    match = _S3_URI.match(uri)
    if match is None or match.group(1) != "s3":
        raise ValidationError(f"{field}: {uri!r} is not an S3 URI (expected s3://bucket/key)")
    return S3Location(match.group(2), match.group(3))
