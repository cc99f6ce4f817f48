"""Assembly of responses into the output object (R13), output naming (R11: Gzip input is
decompressed and its output written plain; R12: each input object gives one output named after it),
and the markers of a finished output folder."""

from batchinfer.errors import ValidationError
from batchinfer.transform.records import count_records

OUTPUT_SUFFIX = ".out"
# What a finished job leaves in its output folder beside the outputs: the record of what it
# did, then the marker that says the folder is complete (written last).
RESULT_MANIFEST = "_manifest.json"
SUCCESS_MARKER = "_SUCCESS"


def assemble(response: bytes, assemble_with: str) -> bytes:
    """R13: None keeps the body byte for byte; Line adds ``\\n`` unless it already ends one."""
    if assemble_with == "Line" and not response.endswith(b"\n"):
        return response + b"\n"
    return response


def output_records(assembled: bytes, assemble_with: str) -> int | None:
    """Records in an assembled response: its lines for Line, None (not countable) for None."""
    return count_records(assembled) if assemble_with == "Line" else None


def output_name(input_name: str) -> str:
    """R12/R11: ``a/b.csv`` -> ``a/b.csv.out``; ``x.csv.gz`` -> ``x.csv.gz.out`` (the output
    is uncompressed; the name keeps the input's, as this project chooses)."""
    if not input_name or input_name.endswith("/"):
        raise ValidationError(f"input name {input_name!r}: an output needs a file name")
    return input_name + OUTPUT_SUFFIX
