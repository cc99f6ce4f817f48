"""Media types as Content-Type and Accept headers carry them. Standard library only."""

CSV = "text/csv"
JSON = "application/json"
JSONLINES = "application/jsonlines"
NPY = "application/x-npy"


def media_type(header: str | None) -> str | None:
    """``text/csv; charset=utf-8`` -> ``text/csv``: lower case, without parameters; None for
    no header or an empty one."""
    if header is None:
        return None
    return header.split(";", 1)[0].strip().lower() or None
