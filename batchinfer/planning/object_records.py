"""The records of a whole object (SplitType None) where its own header says how many, read
without decoding the object: a ``.npy`` array's first dimension, a Parquet file's rows.
``plan --tune`` sweeps forward batches only below them (a larger batch sends the same passes);
other content types leave it to the server's default batch."""

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, cast

from batchinfer.engine.inputs import InputFile
from batchinfer.media_types import NPY, PARQUET, codec_type
from batchinfer.serving.codecs import read_npy_header
from batchinfer.transform.parquet_footer import rows_at_end
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
            with file.path.open("rb") as stream:
                return rows_at_end(_reader(stream), file.path.stat().st_size)
    except Exception:  # numpy's header parser and zlib raise many types for a damaged one
        return None
    return None


def _opened(path: Path, gzipped: bool) -> BinaryIO:
    return cast(BinaryIO, gzip.open(path, "rb") if gzipped else path.open("rb"))


def _reader(stream: BinaryIO) -> Callable[[int, int], bytes]:
    def read_range(start: int, end: int) -> bytes:
        stream.seek(start)
        return stream.read(end - start)

    return read_range
