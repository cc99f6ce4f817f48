"""Request decoders and response encoders for the content types the default handler speaks.

Inputs: ``text/csv`` (numbers, no header), ``application/jsonlines`` (one JSON list of numbers,
or one number, per line), ``application/json`` (``{"instances": [...]}`` or a bare list) and
``application/x-npy``. Each decoder returns a 2-D float array with one row per record (a
record holding a single number becomes a row of one feature); ``.npy`` arrays of any numeric
dtype with two or more dimensions pass unchanged.

Values are read as SageMaker's framework containers read them (``np.genfromtxt``,
``json.loads``): a missing value (an empty CSV field, ``nan``, ``NA``, ``null`` and Arrow's
other null spellings; JSON ``null`` and ``NaN``) is NaN, ``inf``/``Infinity`` of either sign
is infinite, and the model decides whether it takes them (HistGradientBoosting, XGBoost and
LightGBM read NaN as missing; an estimator that refuses them raises ValueError, which the
server answers 400). A decimal number beyond float64's range reads as infinite, as Python's
``float`` reads it; an integer beyond it is refused, as NumPy refuses to convert it.

A malformed body raises :class:`RequestError` 400 naming the record at fault
(``<type> record N ...``, ``<type> record N, field P ...``) or, where no one record is, the
body (``<type> body ...``): values that are not numbers, records of different lengths, an
empty line (a record, as SplitType Line frames it, that holds no value; JSON Lines too), a
``\\r`` that does not end a line, text that is not UTF-8, a gzip-compressed text body, JSON
nested too deeply, a ``.npy`` header that does not match its data.

Outputs: ``text/csv`` and ``application/jsonlines`` write exactly one line per record, each
line ending with ``\\n`` (so the body ends with a newline, as NumPy's ``savetxt`` does in
SageMaker's framework containers; AssembleWith Line then adds nothing, spec R13: AssembleWith
decides what goes between responses). ``application/json`` writes one JSON array,
``application/x-npy`` one ``.npy`` file.

The numeric paths have no Python loop per record: CSV is parsed by Arrow, numbers are
written by Arrow. The slow loop over records runs only to name the record at fault when a
request is malformed.
"""

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, NoReturn

import numpy as np
import numpy.lib.format as npy_format
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as papq

from batchinfer.media_types import CSV, JSON, JSONLINES, NPY, PARQUET, codec_type
from batchinfer.serving.server_errors import RequestError

# Text types whose body a user's ``input_fn`` receives as ``str``, as SageMaker's
# scikit-learn and XGBoost containers pass it; every other type arrives as ``bytes``.
TEXT_TYPES = frozenset({CSV, JSON, JSONLINES})
_GZIP_MAGIC = b"\x1f\x8b"
# A carriage return that neither ends a ``\r\n`` nor the body.
_STRAY_CR = re.compile(rb"\r(?!\n|\Z)")
# Field values Arrow reads as missing (NaN), besides the empty field; matched exactly.
_ARROW_NULLS = frozenset(pacsv.ConvertOptions().null_values)
# A field Arrow reads as a float64: ASCII, surrounded by spaces or tabs at most.
_ARROW_FLOAT = re.compile(
    r"[ \t]*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)[ \t]*",
    re.IGNORECASE | re.ASCII,
)
# The .npy versions whose header numpy reads with a public function; version 3.0 exists only
# for structured dtypes with non-Latin-1 field names, which are not numbers anyway.
_NPY_HEADER_READERS = {
    (1, 0): npy_format.read_array_header_1_0,
    (2, 0): npy_format.read_array_header_2_0,
}
_NOT_NUMBERS_HINT = (
    "a model fitted on an array takes numbers only: a header row needs --header, and text or "
    "categorical columns a model fitted on a DataFrame, or input_fn in inference.py"
)


# --- decoders --------------------------------------------------------------------------------


def decode_csv(
    body: bytes, delimiter: str = ",", *, first: int = 1, fields: int | None = None
) -> np.ndarray:
    """Parse numeric CSV records (no header) into an ``(records, fields)`` float64 array.
    ``body`` may be a run of a request's records from record ``first`` on, after a record 1
    of ``fields`` fields: a bad record is then named by its place in the request."""
    n_fields = _check_csv_body(body, delimiter, first, fields)
    names = [f"f{i}" for i in range(n_fields)]
    table = _read_csv(
        body,
        names,
        delimiter,
        pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.float64())),
        numbers=True,
        first=first,
    )
    matrix = np.empty((table.num_rows, n_fields), dtype=np.float64)
    for j, column in enumerate(table.columns):
        _fill_column(matrix, j, column)
    return matrix


# The numeric paths read and build Arrow arrays from their buffers: ``to_numpy`` and
# ``pa.array`` import pandas, about 0.6 s of a model server worker's first request (and its
# memory ever after) for a model that never uses it.


def _fill_column(matrix: np.ndarray, j: int, column: pa.ChunkedArray) -> None:
    """Column ``j`` of ``matrix`` from a float64 Arrow column, chunk by chunk."""
    start = 0
    for chunk in column.chunks:
        matrix[start : start + len(chunk), j] = _float64_values(chunk)
        start += len(chunk)


def _float64_values(chunk: pa.Array) -> np.ndarray:
    """A float64 Arrow array's values, its nulls (missing values) as NaN."""
    validity, data = chunk.buffers()
    values = np.frombuffer(data, dtype=np.float64, count=len(chunk), offset=chunk.offset * 8)
    if not chunk.null_count:
        return values
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    return np.where(bits[chunk.offset : chunk.offset + len(chunk)].astype(bool), values, np.nan)


def _arrow_values(column: np.ndarray) -> pa.Array:
    """A 1-D bool/int/float NumPy array as an Arrow array of the same type."""
    if column.dtype.kind == "b":
        data = pa.py_buffer(np.packbits(column, bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(column))
    return pa.Array.from_buffers(pa.from_numpy_dtype(column.dtype), len(column), [None, data])


def read_csv_table(body: bytes, names: list[str], delimiter: str = ",") -> pa.Table:
    """Parse CSV records (no header) into a table with these column names and the types
    their values have: numbers, booleans and text (which stays text: dates too, as
    ``pandas.read_csv`` leaves them). A record with another number of fields is a 400."""
    n_fields = _check_csv_body(body, delimiter)
    if n_fields != len(names):
        raise RequestError(
            400,
            f"text/csv records have {n_fields} field{'' if n_fields == 1 else 's'}, "
            f"{len(names)} columns are named: {_shorten(', '.join(names))}",
        )
    table = _read_csv(body, names, delimiter, pacsv.ConvertOptions(), numbers=False)
    if any(pa.types.is_binary(f.type) for f in table.schema):  # Arrow's type for non-UTF-8
        _refuse_csv(body, n_fields, delimiter, "text that is not UTF-8", numbers=False)
    temporal = [f.name for f in table.schema if pa.types.is_temporal(f.type)]
    if temporal:  # Arrow reads dates as dates; a model fitted on read_csv's frame saw text
        types = dict.fromkeys(temporal, pa.string())
        table = _read_csv(body, names, delimiter, pacsv.ConvertOptions(column_types=types), False)
    return table


def _check_csv_body(body: bytes, delimiter: str, first: int = 1, fields: int | None = None) -> int:
    """The number of fields of record 1, after the checks Arrow does not make: ``fields``
    when ``body`` is a later run of its request's records, from record ``first`` on."""
    if fields is None:
        if not body or body.isspace():  # no copy of the body, as strip() would make
            raise RequestError(400, "text/csv body is empty: it holds no record")
        end = body.find(b"\n")
        fields = len(csv_fields(first, body if end < 0 else body[:end], delimiter))
    if b"\r" in body and _STRAY_CR.search(body):  # Arrow would end a row within a record
        _refuse_csv(body, fields, delimiter, "a carriage return within a record", False, first)
    return fields


def _read_csv(
    body: bytes,
    names: list[str],
    delimiter: str,
    convert: pacsv.ConvertOptions,
    numbers: bool,
    first: int = 1,
) -> pa.Table:
    n_fields = len(names)
    try:
        table = pacsv.read_csv(
            pa.BufferReader(body),
            read_options=pacsv.ReadOptions(column_names=names),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=convert,
        )
    except pa.ArrowInvalid as exc:
        _refuse_csv(body, n_fields, delimiter, str(exc), numbers, first)
    records = _newlines(body) + (not body.endswith(b"\n"))
    if table.num_rows != records:  # Arrow skips empty lines; each is a record (SplitType Line)
        why = f"{table.num_rows} rows read from {records} lines"
        _refuse_csv(body, n_fields, delimiter, why, numbers, first)
    return table


def line_runs(chunks: Iterable[bytes], size: int) -> Iterator[bytes]:
    """The body made of ``chunks`` (the parts of it read so far, or the whole of it) in runs
    of at most ``size`` lines, each run ending with its last line's ``\\n`` (the last run as
    the body ends), yielded as soon as a run is read; the lines are found a block of
    :data:`_SCAN` bytes at a time, so that no temporary as large as a chunk is made."""
    held: list[bytes] = []  # the current run's bytes from earlier chunks
    pending = 0  # the lines of the current run found so far
    for chunk in chunks:
        view = np.frombuffer(chunk, dtype=np.uint8)
        start = 0
        for block in range(0, len(chunk), _SCAN):
            ends = np.flatnonzero(view[block : block + _SCAN] == _NEWLINE) + (block + 1)
            for end in ends[size - pending - 1 :: size].tolist():
                run, held, start = b"".join([*held, chunk[start:end]]), [], end
                yield run  # the parts it was joined from let go first: one copy of a run
            pending = (pending + len(ends)) % size
        if start < len(chunk):
            held.append(chunk[start:])
    if held:
        run, held = b"".join(held), []
        yield run


_SCAN = 1 << 16
_NEWLINE = ord("\n")


def _newlines(body: bytes) -> int:
    """How many ``\\n`` ``body`` holds: NumPy counts them several times faster than
    ``bytes.count`` does."""
    return int(np.count_nonzero(np.frombuffer(body, dtype=np.uint8) == ord("\n")))


def csv_fields(number: int, raw: bytes, delimiter: str = ",") -> list[str]:
    """The fields of CSV record ``number`` (one line without its ``\\n``), or a 400 naming it."""
    try:
        line = raw.removesuffix(b"\r").decode("utf-8")
    except UnicodeDecodeError:
        raise RequestError(
            400, f"text/csv record {number} is not UTF-8 text (another encoding: give its charset)"
        ) from None
    if not line:
        raise RequestError(400, f"text/csv record {number} is empty")
    if "\r" in line:
        raise RequestError(
            400, f"text/csv record {number} holds a carriage return (\\r) that does not end it"
        )
    try:
        return next(csv.reader([line], delimiter=delimiter))
    except csv.Error as exc:
        raise RequestError(400, f"text/csv record {number} is not one CSV line: {exc}") from None


def _refuse_csv(
    body: bytes,
    n_fields: int,
    delimiter: str,
    parser_message: str,
    numbers: bool,
    first: int = 1,
) -> NoReturn:
    """Raise a 400 naming the first malformed record of a CSV body, whose first record is
    record ``first`` of its request, of which record 1 has ``n_fields`` fields (error path
    only)."""
    lines = body.split(b"\n")
    if body.endswith(b"\n"):
        lines.pop()
    for number, raw in enumerate(lines, start=first):
        fields = csv_fields(number, raw, delimiter)
        if len(fields) != n_fields:
            line = raw.removesuffix(b"\r").decode()
            raise RequestError(
                400,
                f"text/csv record {number} has {len(fields)} fields, "
                f"record 1 has {n_fields}: {_shorten(line)}",
            )
        for position, field in enumerate(fields, start=1):
            if numbers and not _is_number(field):
                raise RequestError(
                    400,
                    f"text/csv record {number}, field {position}: {_shorten(field)} is not a "
                    f"number ({_NOT_NUMBERS_HINT})",
                )
    kind = "numbers" if numbers else "CSV"
    raise RequestError(400, f"text/csv body cannot be parsed as {kind}: {parser_message}")


def _is_number(field: str) -> bool:
    """Whether Arrow's CSV reader reads ``field`` as a float64 (a number or missing)."""
    return field in _ARROW_NULLS or _ARROW_FLOAT.fullmatch(field) is not None


def _shorten(text: str, limit: int = 100) -> str:
    """``repr`` of ``text``, cut to about ``limit`` characters for an error message."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}..."


def decode_jsonlines(body: bytes) -> np.ndarray:
    """Parse JSON Lines records (each a list of numbers, or a number) into a 2-D array."""
    return records_to_matrix(parse_jsonlines(body), JSONLINES)


def parse_jsonlines(body: bytes) -> list[Any]:
    """The JSON value of each line of a JSON Lines body, or a 400 naming the line at fault."""
    if not body:
        raise RequestError(400, "application/jsonlines body is empty: it holds no record")
    lines = body.split(b"\n")
    if body.endswith(b"\n"):
        lines.pop()
    try:
        records = json.loads(b"[" + b",".join(lines) + b"]")
    except (ValueError, RecursionError):
        raise _jsonlines_record_error(lines) from None
    if len(records) != len(lines):  # a line holding several comma-separated values
        raise _jsonlines_record_error(lines)
    if not records:
        raise RequestError(400, "application/jsonlines body holds no record")
    return records


def _jsonlines_record_error(lines: list[bytes]) -> RequestError:
    records = []
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            return RequestError(400, f"application/jsonlines record {number} is not UTF-8 text")
        if not line.strip():
            return RequestError(400, f"application/jsonlines record {number} is empty")
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            return RequestError(
                400, f"application/jsonlines record {number} is not one JSON value: {exc}"
            )
    return _records_error(records, JSONLINES) or RequestError(
        400, "application/jsonlines body cannot be parsed"
    )


def decode_json(body: bytes) -> np.ndarray:
    """Parse ``{"instances": [...]}`` or a bare JSON list of records into a 2-D array."""
    return records_to_matrix(parse_json(body), JSON)


def parse_json(body: bytes) -> list[Any]:
    """The records of ``{"instances": [...]}`` or of a bare JSON list, or a 400."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise RequestError(400, f"application/json body is not valid JSON: {exc}") from None
    if isinstance(document, dict):
        if "instances" not in document:
            raise RequestError(
                400, 'application/json body: an object needs an "instances" list of records'
            )
        document = document["instances"]
    if not isinstance(document, list):
        raise RequestError(
            400,
            'application/json body must be a list of records or {"instances": [...]}, '
            f"not {type(document).__name__}",
        )
    if not document:
        raise RequestError(400, "application/json body holds no record")
    return document


def records_to_matrix(records: list[Any], kind: str) -> np.ndarray:
    """Records (numbers or flat lists of numbers) as a 2-D float64 array, or a 400 naming the
    first record that is not."""
    if not records:
        raise RequestError(400, f"{kind} body holds no record")
    try:
        matrix = np.asarray(records, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        matrix = None
    if matrix is None or matrix.ndim > 2:
        raise _records_error(records, kind) or RequestError(
            400, f"{kind} body: records must be numbers or flat lists of numbers"
        )
    return matrix.reshape(len(records), -1)


def _records_error(records: list[Any], kind: str) -> RequestError | None:
    """Describe the first record that is neither a number nor a flat list of numbers
    within float64's range, or that is not shaped like record 1."""
    for number, record in enumerate(records, start=1):
        values = record if isinstance(record, list) else [record]
        for position, value in enumerate(values, start=1):
            fault = _value_fault(value)
            if fault:
                return RequestError(
                    400, f"{kind} record {number}, value {position}: {_json_excerpt(value)} {fault}"
                )
        if _record_shape(record) != _record_shape(records[0]):
            return RequestError(
                400,
                f"{kind} record {number} {_record_shape(record)}, "
                f"record 1 {_record_shape(records[0])}",
            )
    return None


def _value_fault(value: Any) -> str | None:
    """Why NumPy cannot read a JSON value as a float64, or None when it can."""
    if value is None or isinstance(value, float):
        return None
    if isinstance(value, dict):
        return (
            "is an object: its keys name features, and the model was fitted on an array "
            "without names (fit it on a DataFrame, or send arrays)"
        )
    if isinstance(value, int):  # true and false too: NumPy reads them as 1 and 0
        try:
            float(value)
        except OverflowError:
            return "is beyond the float64 range"
        return None
    return f"is not a number ({_NOT_NUMBERS_HINT})"


def _record_shape(record: Any) -> str:
    if not isinstance(record, list):
        return "is a single number"
    return f"has {len(record)} value{'' if len(record) == 1 else 's'}"


def _json_excerpt(value: Any) -> str:
    """A JSON value for an error message: arrays and objects elided (they may nest deeply)."""
    if isinstance(value, list):
        return "[...]"
    if isinstance(value, dict):
        return "{...}"
    text = json.dumps(value)
    return text if len(text) <= 100 else f"{text[:100]}..."


def read_npy_header(stream: BinaryIO) -> tuple[tuple[int, ...], bool, np.dtype]:
    """The shape, Fortran order and dtype that a ``.npy`` stream's header gives, leaving the
    stream at its data; ValueError for a version other than 1.0 and 2.0 (numpy's parser of
    the header raises other types for a malformed one)."""
    version = npy_format.read_magic(stream)
    read_header = _NPY_HEADER_READERS.get(version)
    if read_header is None:
        raise ValueError(f"version {version[0]}.{version[1]} is not supported")
    shape, fortran_order, dtype = read_header(stream)
    return shape, fortran_order, dtype


def decode_npy(body: bytes) -> np.ndarray:
    """Read a ``.npy`` payload of numbers (no pickles); a 1-D array is records of one value.
    The header is checked against the data before anything is allocated."""
    stream = io.BytesIO(body)
    try:
        shape, fortran_order, dtype = read_npy_header(stream)
    except Exception as exc:  # numpy parses the header with ast and tokenize, which raise
        # many types for a hostile one; no model code runs here, so any failure is the body's
        raise RequestError(400, f"application/x-npy body is not a .npy array: {exc}") from None
    if dtype.kind not in "biuf":
        raise RequestError(
            400, f"application/x-npy body holds {dtype} values, not numbers ({_NOT_NUMBERS_HINT})"
        )
    if any(length < 0 for length in shape):
        raise RequestError(400, f"application/x-npy body: its header's shape {shape} is invalid")
    size, offset = math.prod(shape), stream.tell()
    if size * dtype.itemsize != len(body) - offset:
        raise RequestError(
            400,
            f"application/x-npy body holds {len(body) - offset} bytes of data, "
            f"its header's shape {shape} of {dtype} needs {size * dtype.itemsize}",
        )
    if not shape or shape[0] == 0:
        raise RequestError(400, "application/x-npy body holds no record")
    flat = np.frombuffer(body, dtype=dtype, count=size, offset=offset)
    array = flat.reshape(shape, order="F" if fortran_order else "C").copy(order="K")
    return array.reshape(-1, 1) if array.ndim == 1 else array


def read_parquet(body: bytes) -> pa.Table:
    """A Parquet body (a whole Parquet file) as its table: columns named, types kept."""
    try:
        return papq.read_table(pa.BufferReader(body))
    except (pa.ArrowException, OSError) as exc:
        raise RequestError(400, f"{PARQUET} body is not a readable Parquet file: {exc}") from None


def decode_parquet(body: bytes) -> np.ndarray:
    """A Parquet body as :func:`parquet_matrix` reads it."""
    return parquet_matrix(read_parquet(body))


def parquet_matrix(table: pa.Table) -> np.ndarray:
    """A Parquet table's columns, in the file's order, as an ``(records, columns)`` float64
    array for a model fitted on an array: numbers and booleans, a missing value as NaN; a
    column of anything else is a 400 naming it."""
    if table.num_rows == 0:
        raise RequestError(400, f"{PARQUET} body holds no record")
    matrix = np.empty((table.num_rows, table.num_columns), dtype=np.float64)
    for j, (field, column) in enumerate(zip(table.schema, table.columns, strict=True)):
        kind = field.type
        if not any(check(kind) for check in (pa.types.is_integer, pa.types.is_floating,
                                             pa.types.is_boolean)):  # fmt: skip
            raise RequestError(
                400,
                f"{PARQUET} column {field.name!r} holds {kind} values, not numbers: a model "
                "fitted on an array takes numbers only; text or categorical columns need a "
                "model fitted on a DataFrame (given the columns by name), or input_fn in "
                "inference.py",
            )
        _fill_column(matrix, j, column.cast(pa.float64()))
    return matrix


DECODERS: dict[str, Callable[[bytes], np.ndarray]] = {
    CSV: decode_csv,
    JSONLINES: decode_jsonlines,
    JSON: decode_json,
    NPY: decode_npy,
    PARQUET: decode_parquet,
}


def decode(body: bytes, content_type: str) -> np.ndarray:
    """Decode a request body of a supported content type; 415 for any other type."""
    decoder = DECODERS.get(content_type)
    if decoder is None:
        raise RequestError(
            415, f"content type {content_type!r} is not supported; use one of {_listing()}"
        )
    check_not_gzip(body, content_type)
    return decoder(body)


def check_not_gzip(body: bytes, content_type: str) -> None:
    """A 400 for a text body that is gzip-compressed."""
    if content_type in TEXT_TYPES and body.startswith(_GZIP_MAGIC):
        raise RequestError(
            400,
            f"{content_type} body is gzip-compressed: send it uncompressed (a job with "
            "CompressionType Gzip decompresses its input before sending it)",
        )


# --- encoders --------------------------------------------------------------------------------


def host_values(prediction: Any) -> Any:
    """A tensor (PyTorch's, on any device, with or without grad) as a NumPy array on the
    host, of its own memory; anything else as it is.

    The copy lets PyTorch free the tensor at once: arrays that share its memory, kept
    while the next forward passes of a request run, made each pass of 1,024 records of a
    30 -> 256 -> 256 -> 1 network a quarter slower on one thread (580,000 rows/s against
    775,000), by the way PyTorch's memory is reused; the copy of a pass's predictions
    costs far less than that."""
    detach = getattr(prediction, "detach", None)
    if callable(detach) and callable(getattr(prediction, "cpu", None)):
        return np.array(detach().cpu().numpy())
    return prediction


def _numeric_records(prediction: Any) -> np.ndarray | None:
    """The prediction as a 1-D/2-D bool/int/float array, or None when it is anything else."""
    try:
        array = np.asarray(prediction)
    except ValueError:  # ragged nested lists
        return None
    if array.dtype.kind not in "biuf" or array.ndim > 2:
        return None
    return array.reshape(1) if array.ndim == 0 else array


def _arrow_lines(array: np.ndarray) -> bytes:
    """One line per record, fields comma-separated, numbers in shortest round-trip form."""
    if len(array) == 0:
        return b""
    columns = array.reshape(len(array), -1)
    table = pa.table(
        [_arrow_values(columns[:, j]) for j in range(columns.shape[1])],
        names=[f"f{j}" for j in range(columns.shape[1])],
    )
    sink = pa.BufferOutputStream()
    pacsv.write_csv(table, sink, pacsv.WriteOptions(include_header=False, quoting_style="none"))
    return sink.getvalue().to_pybytes()


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _json_records(prediction: Any) -> list[Any]:
    if isinstance(prediction, np.ndarray):
        return prediction.tolist()
    if hasattr(prediction, "tolist"):
        return prediction.tolist()
    return list(prediction)


def _all_finite(array: np.ndarray) -> bool:
    return array.dtype.kind != "f" or bool(np.isfinite(array).all())


def encode_csv(prediction: Any) -> bytes:
    """One CSV line per record (2-D predictions give one field per column)."""
    array = _numeric_records(prediction)
    if array is not None:
        return _arrow_lines(array)
    array = np.asarray(prediction, dtype=object)
    if array.ndim > 2:
        raise ValueError(f"a prediction of shape {array.shape} cannot be written as text/csv")
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerows(array.reshape(len(array), -1) if array.ndim else [[array.item()]])
    return stream.getvalue().encode("utf-8")


def encode_jsonlines(prediction: Any) -> bytes:
    """One JSON value per line: a number, or a list for a record with several outputs."""
    array = _numeric_records(prediction)
    if array is not None and _all_finite(array):
        lines = _arrow_lines(array)
        if array.ndim == 1 or not lines:
            return lines
        return b"[" + lines[:-1].replace(b"\n", b"]\n[") + b"]\n"
    records = _json_records(prediction)
    text = "".join(json.dumps(record, default=_json_default) + "\n" for record in records)
    return text.encode("utf-8")


def encode_json(prediction: Any) -> bytes:
    """The predictions as one JSON array, one element per record."""
    array = _numeric_records(prediction)
    if array is not None and _all_finite(array):
        return b"[" + encode_jsonlines(array)[:-1].replace(b"\n", b",") + b"]"
    records = _json_records(prediction) if hasattr(prediction, "__len__") else prediction
    return json.dumps(records, default=_json_default).encode("utf-8")


def encode_npy(prediction: Any) -> bytes:
    """The predictions as a ``.npy`` file."""
    stream = io.BytesIO()
    np.save(stream, np.asarray(prediction), allow_pickle=False)
    return stream.getvalue()


PREDICTION_COLUMN = "prediction"


def prediction_table(prediction: Any) -> pa.Table:
    """Predictions as a table: a DataFrame's or a named Series' own columns; otherwise one
    column ``prediction`` for one value a record, ``prediction_0``, ``prediction_1``, ... for
    several (class probabilities)."""
    if hasattr(prediction, "columns") and hasattr(prediction, "iloc"):  # a DataFrame
        return pa.Table.from_pandas(prediction, preserve_index=False)
    if hasattr(prediction, "iloc"):  # a Series
        name = prediction.name if prediction.name is not None else PREDICTION_COLUMN
        return pa.Table.from_pandas(prediction.to_frame(str(name)), preserve_index=False)
    array = np.asarray(prediction)
    if array.ndim == 0:
        array = array.reshape(1)
    if array.ndim > 2:
        raise ValueError(f"a prediction of shape {array.shape} cannot be written as {PARQUET}")
    if array.ndim == 1:
        return pa.table({PREDICTION_COLUMN: _column_values(array)})
    return pa.table(
        {f"{PREDICTION_COLUMN}_{j}": _column_values(array[:, j]) for j in range(array.shape[1])}
    )


def _column_values(column: np.ndarray) -> pa.Array:
    if column.dtype.kind in "biuf":
        return _arrow_values(column)
    return pa.array(column.tolist())  # labels: text, or values of mixed types


def encode_parquet(prediction: Any) -> bytes:
    """One Parquet file holding the predictions, a row per record (:func:`prediction_table`)."""
    return write_parquet(prediction_table(prediction))


def joined_parquet(table: pa.Table, prediction: Any) -> bytes:
    """The Parquet request's ``table``, then the prediction's columns
    (:func:`prediction_table`), as one Parquet file: a join of the input and its answer, row
    for row. A prediction of another length is answered as it is (the client's count of rows
    then names both); a prediction column the input already has is a 400 naming it."""
    answer = prediction_table(host_values(prediction))
    if answer.num_rows != table.num_rows:
        return write_parquet(answer)
    taken = sorted(set(answer.column_names) & set(table.column_names))
    if taken:
        raise RequestError(
            400,
            f"{PARQUET} column {taken[0]!r} is in the input and in the prediction: a join "
            "would hold it twice; rename it in the input, or leave out --join-source Input",
        )
    for name, column in zip(answer.column_names, answer.columns, strict=True):
        table = table.append_column(name, column)
    return write_parquet(table)


def write_parquet(table: pa.Table) -> bytes:
    """``table`` as the bytes of one Parquet file (one row group)."""
    sink = pa.BufferOutputStream()
    papq.write_table(table, sink, row_group_size=max(1, table.num_rows))
    return sink.getvalue().to_pybytes()


ENCODERS: dict[str, Callable[[Any], bytes]] = {
    CSV: encode_csv,
    JSONLINES: encode_jsonlines,
    JSON: encode_json,
    NPY: encode_npy,
    PARQUET: encode_parquet,
}


def encode(prediction: Any, accept: str) -> bytes:
    """Encode predictions as ``accept``; 406 when that type is not supported."""
    encoder = ENCODERS.get(accept)
    if encoder is None:
        raise RequestError(406, f"accept type {accept!r} is not supported; use one of {_listing()}")
    return encoder(host_values(prediction))


def negotiate(accept: str | None, default: str, supported: frozenset[str] | None) -> str:
    """Pick the response type from an Accept header: its first listed type that is
    ``supported`` (any type when ``supported`` is None); ``default`` when the header is
    missing or reaches a wildcard (``*/*``) first. 406 when it lists only unsupported types."""
    offered = [kind for kind in map(codec_type, accept.split(",")) if kind] if accept else []
    for kind in offered:
        if "*" in kind:
            return default
        if supported is None or kind in supported:
            return kind
    if offered:
        raise RequestError(406, f"accept type {accept!r} is not supported; use one of {_listing()}")
    return default


def _listing() -> str:
    return ", ".join(sorted(DECODERS))
