"""The records of a whole object (SplitType None) where its own header says how many, read
without decoding the object: a ``.npy`` array's first dimension, a Parquet file's rows.
``plan --tune`` sweeps forward batches only below them (a larger batch sends the same passes);
other content types leave it to the server's default batch."""

import gzip
from pathlib import Path
from typing import BinaryIO, cast

from batchinfer.engine.inputs import InputFile
from batchinfer.media_types import NPY, PARQUET, codec_type
from batchinfer.serving.codecs import read_npy_header
from batchinfer.sharding.parquet_split import file_footer
from batchinfer.transform.settings import TransformSettings


def object_records(file: InputFile, settings: TransformSettings) -> int | None:
    """The records ``file`` holds as the model server reads it, or None where its header
    does not say (another content type, or a header that cannot be read: the run names
    that file's fault, not the plan)."""
    kind = codec_type(settings.content_type)
    try:
        if kind == NPY:
            with _opened(file.path, settings.compression_type == "Gzip") as stream:
                shape = read_npy_header(stream)[0]
            return shape[0] if shape else None
        if kind == PARQUET and settings.compression_type != "Gzip":
            return file_footer(str(file.path)).rows
    except Exception:  # numpy's header parser and zlib raise many types for a damaged one
        return None
    return None


def _opened(path: Path, gzipped: bool) -> BinaryIO:
    return cast(BinaryIO, gzip.open(path, "rb") if gzipped else path.open("rb"))
