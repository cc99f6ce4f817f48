"""Parsing of human-readable byte sizes such as ``64MiB`` or ``1.5GB``."""

import re

from batchinfer.errors import ValidationError

MIB = 1024**2  # MaxPayloadInMB counts these (1 MB = 1,048,576 bytes, the larger reading)

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": MIB,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str, *, field: str = "size") -> int:
    """Return the number of bytes in ``text`` (``"64MiB"``, ``"1.5GB"``, ``"4096"``)."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValidationError(
            f"{field}: {text!r} is not a size; use a number with an optional unit "
            "(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 64MiB"
        )
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValidationError(f"{field}: {text!r} must be greater than zero")
    return size
