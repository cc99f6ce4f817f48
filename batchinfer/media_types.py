"""Media types as Content-Type and Accept headers carry them. Standard library only."""

CSV = "text/csv"
JSON = "application/json"
JSONLINES = "application/jsonlines"
NPY = "application/x-npy"
PARQUET = "application/x-parquet"
# The request types the model server's default handler decodes (serving/codecs.DECODERS).
DECODED_TYPES = frozenset({CSV, JSON, JSONLINES, NPY, PARQUET})


def media_type(header: str | None) -> str | None:
    """``text/csv; charset=utf-8`` -> ``text/csv``: lower case, without parameters; None for
    no header or an empty one."""
    if header is None:
        return None
    return header.split(";", 1)[0].strip().lower() or None


# Other spellings of JSON Lines, NumPy's type and Parquet's, read as the names above.
ALIASES = {
    "application/jsonl": JSONLINES,
    "application/x-jsonlines": JSONLINES,
    "application/json-lines": JSONLINES,
    "application/npy": NPY,
    "application/vnd.apache.parquet": PARQUET,  # Apache Parquet's own vendor type
}


def codec_type(header: str | None) -> str | None:
    """The codec a Content-Type/Accept value selects: its media type, with the common
    aliases of JSON Lines and NumPy's type read as the canonical names."""
    kind = media_type(header)
    return ALIASES.get(kind, kind) if kind else None
