"""The inference handler: SageMaker's user-module protocol, with defaults for tabular models.

A model directory may hold a user module, ``code/inference.py`` or ``inference.py`` (the
name comes from ``SAGEMAKER_PROGRAM`` when set), defining any of::

    model_fn(model_dir: str) -> model
    input_fn(body: str | bytes, content_type: str) -> data
    predict_fn(data, model) -> prediction
    output_fn(prediction, accept: str) -> bytes | str | tuple[bytes | str, content_type]

or ``transform_fn(model, body, content_type, accept)`` in place of the last three; each may
take one more argument, ``context`` (:class:`HandlerContext`), as in SageMaker's PyTorch
toolkit. Whatever it does not define falls back to the defaults: ``models.load_model``, the
decoders and encoders of ``codecs``, and ``model.predict`` (or the method
``BATCHINFER_PREDICT_METHOD`` names). A prediction may be a tensor (PyTorch's, on any device,
with or without grad): it is encoded as the array it holds.

``BATCHINFER_MAX_BATCH_RECORDS`` splits each decoded request into forward passes of at most
that many records (65,536 when it is unset; 0: a whole request in one pass), for the default
``predict_fn`` and for a user one whose module declares
``PREDICT_FN_ROW_WISE = True`` (it scores each record on its own); the predictions are joined
in order: a single pass's predictions, record for record (a runtime's kernels may block
batches of other sizes apart, so a float can differ in its last digit). Numeric CSV answered
a line per record is split before it is decoded: each run of whole forward batches (about a
MiB of the body) is decoded, predicted a batch at a time and encoded in turn, so a request's
decoded records never stand in memory all at once; the server hands such a body over as it
reads it (:meth:`InferenceHandler.answer_runs`), so that its bytes do not either.
As in SageMaker's scikit-learn and XGBoost containers, a user ``input_fn`` receives ``str`` for
text/csv, application/json and application/jsonlines bodies and ``bytes`` otherwise; content
types arrive lower case and without parameters (``text/csv; charset=utf-8`` -> ``text/csv``),
and a text body in another ``charset`` is decoded from it (the default decoders read UTF-8).
The default decoders give a model fitted on a DataFrame its named columns (:mod:`tables`).

A request without Content-Type is read as text/csv. A request without Accept (or with
``*/*``) is answered in ``SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT`` when set, else in its own
content type when the default encoders can write it, else in application/json.
"""

import importlib.util
import inspect
import itertools
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from batchinfer.errors import ValidationError
from batchinfer.media_types import CSV, JSON, JSONLINES, PARQUET, codec_type
from batchinfer.serving import codecs
from batchinfer.serving.model_requirements import ensure_requirements
from batchinfer.serving.models import load_model, predict_method
from batchinfer.serving.readable import find_user_module
from batchinfer.serving.server_errors import ModelLoadError, RequestError
from batchinfer.serving.tables import TableReader
from batchinfer.transform.bad_records import answer_apart, lines_of
from batchinfer.transform.csv_dialect import (
    DEFAULT_CHARSET,
    RequestAttributes,
    attributes_of,
    charset,
)
from batchinfer.transform.server_limits import (
    MAX_BATCH_RECORDS_VAR,
    forward_batch_set,
    max_bad_records,
    max_batch_records,
)
from batchinfer.transform.settings import JOIN_SOURCE_VAR

LOG = logging.getLogger(__name__)
DEFAULT_ACCEPT_VAR = "SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT"
ROW_WISE_FLAG = "PREDICT_FN_ROW_WISE"
# The user functions and the arguments the handler calls each with (context aside).
USER_FUNCTIONS = {"model_fn": 1, "input_fn": 2, "predict_fn": 2, "output_fn": 2, "transform_fn": 4}
_SUPPORTED_OUTPUTS = frozenset(codecs.ENCODERS)
# Responses of one line per record, which a request's parts answer in turn.
LINE_OUTPUTS = frozenset({CSV, JSONLINES})


@dataclass(frozen=True)
class HandlerContext:
    """The ``context`` a user function may take, as SageMaker's PyTorch toolkit passes it
    from TorchServe: ``system_properties`` holds ``model_dir`` and ``gpu_id`` (the GPU this
    worker uses, None on the CPU)."""

    system_properties: dict[str, Any] = field(default_factory=dict)
    model_name: str = "model"


def _with_context(
    function: Callable[..., Any], arguments: int, context: HandlerContext
) -> Callable[..., Any]:
    """A user function the handler calls with ``arguments`` arguments, given ``context``
    after them when it takes one more parameter (as SageMaker's inference toolkit does)."""
    try:
        takes = len(inspect.signature(function).parameters)
    except (TypeError, ValueError):  # a callable without a signature: the arguments alone
        return function
    if takes != arguments + 1:
        return function
    return lambda *args: function(*args, context)


def _rows(data: Any, start: int, stop: int) -> Any:
    """Records ``start`` to ``stop`` of decoded data (a DataFrame by position)."""
    return data.iloc[start:stop] if hasattr(data, "iloc") else data[start:stop]


def _joined(parts: list[Any]) -> Any:
    """The predictions of consecutive forward passes (each one a record) as one, in order."""
    first = parts[0]
    if hasattr(first, "iloc"):  # a Series or DataFrame
        import pandas as pd

        return pd.concat(parts)
    if isinstance(first, list):
        return [record for part in parts for record in part]
    return np.concatenate(parts)


def _per_record(prediction: Any, records: int) -> bool:
    """Whether ``prediction`` (on the host) holds one entry for each of ``records`` records,
    as consecutive passes' predictions must to be joined: not a tuple or a list of outputs,
    a dict, or a single value."""
    if isinstance(prediction, np.ndarray):
        return prediction.ndim >= 1 and prediction.shape[0] == records
    if isinstance(prediction, list) or hasattr(prediction, "iloc"):
        return len(prediction) == records
    return False


def in_batches(
    predict: Callable[[Any], Any], data: Any, size: int | None, *, size_set: bool
) -> Any:
    """``predict(data)``, in forward passes of at most ``size`` records when ``data`` has
    more. Predictions that are not one entry a record cannot be joined: ``predict(data)``
    in one pass when ``size`` is the default (not ``size_set``), else a RuntimeError (the
    server answers 500) saying to unset it."""
    count = len(data) if size is not None and hasattr(data, "__len__") else 0
    if size is None or count <= size:
        return predict(data)
    parts = []
    for start in range(0, count, size):
        part = codecs.host_values(predict(_rows(data, start, start + size)))
        if not _per_record(part, min(size, count - start)):
            if not size_set:
                return predict(data)
            raise RuntimeError(
                f"a forward pass of {min(size, count - start)} records predicted a "
                f"{type(part).__name__} that is not one entry a record, so passes of "
                f"{MAX_BATCH_RECORDS_VAR}={size} cannot be joined: unset it (or set 0) "
                "for this model"
            )
        parts.append(part)
    return _joined(parts)


def _records_per_decode(head: bytes, batch: int) -> int:
    """The records a streamed request decodes at a time: the whole forward batches that fit
    in about :data:`_DECODE_BYTES` of a body (judged by the first line of ``head``, its
    first part), one at the least.
    Each decode costs a fixed 0.7 ms or so, as much as decoding 300 records of 30 numbers: a
    forward batch of 512 decoded alone would spend a third of its decode time on it."""
    line = head.find(b"\n") + 1 or max(1, len(head))
    return batch * max(1, _DECODE_BYTES // (batch * line))


_DECODE_BYTES = 1 << 20  # Arrow's CSV block: one block a decode, read on one thread


class InferenceHandler:
    """Turns one request body into one response body with a loaded model."""

    def __init__(
        self,
        model: Any,
        user_functions: Mapping[str, Callable[..., Any]],
        *,
        predict_method: str | None,
        default_accept: str | None,
        reader: TableReader | None = None,
        batch_records: int | None = None,
        batch_records_set: bool = True,
        row_wise_predict_fn: bool = False,
        join_input: bool = False,
        most_refused: int | None = None,
    ) -> None:
        self.model = model
        self.user_functions = dict(user_functions)
        self.predict_method = predict_method
        self._default_accept = default_accept
        self._reader = reader or TableReader(None, None)
        # Records per forward pass of the default predict_fn, or a row-wise user one.
        self._batch_records = batch_records
        self._batch_records_set = batch_records_set  # False: the default, not the job's
        self._row_wise_predict_fn = row_wise_predict_fn
        # A Parquet request answered in Parquet holds its own columns too (JOIN_SOURCE_VAR).
        self._join_input = join_input
        # The records of a Line request set aside rather than refuse it (MAX_BAD_RECORDS_VAR).
        self._most_refused = most_refused

    def invoke(
        self,
        body: bytes,
        content_type: str | None,
        accept: str | None,
        custom_attributes: str | None = None,
    ) -> tuple[bytes, str]:
        """Return ``(response body, response content type)`` for one request, as
        :meth:`answer` does; with quarantine on, a CSV or JSON Lines request it refuses
        (400) is told apart (:func:`~batchinfer.transform.bad_records.answer_apart`): the
        records it takes are answered, and each refused one is a marker line in its place."""
        try:
            return self.answer(body, content_type, accept, custom_attributes)
        except RequestError as refusal:
            if self._most_refused is None or codec_type(content_type) not in (CSV, JSONLINES):
                raise
            answer = answer_apart(
                lambda part: self.answer(part, content_type, accept, custom_attributes)[0],
                lines_of(body),
                refusal,
                most_refused=self._most_refused,
                reason_of=_refused_record,
                refused_whole=partial(_refused_whole, refusal),
            )
            return answer, self._response_type(codec_type(content_type) or CSV, accept)

    def answer(
        self,
        body: bytes,
        content_type: str | None,
        accept: str | None,
        custom_attributes: str | None = None,
    ) -> tuple[bytes, str]:
        """Return ``(response body, response content type)`` for one request.
        ``custom_attributes`` (an endpoint request's) may name the CSV columns and delimiter,
        and ask for the Parquet join, as a job's environment does
        (:mod:`batchinfer.transform.csv_dialect`).

        Raises :class:`RequestError` (400, 406, 415) for a request the client must fix: the
        default decoders' findings, and any ValueError (or RequestError) raised while decoding
        or predicting, by the defaults or the user module. Any other exception is a failure
        of the model or the user module (the server answers 500).
        """
        kind = codec_type(content_type) or CSV
        if kind in codecs.TEXT_TYPES:
            body = _utf8(body, kind, content_type)
        user = self.user_functions
        response_type = self._response_type(kind, accept)
        if "transform_fn" in user:
            with _value_errors_refuse("transform_fn"):
                result = user["transform_fn"](
                    self.model, _user_body(body, kind), kind, response_type
                )
            return _response(result, response_type)
        table = None  # a Parquet request's, read once for the model and the join
        told = self._attributes(custom_attributes)
        if "input_fn" in user:
            with _value_errors_refuse("input_fn"):
                data = user["input_fn"](_user_body(body, kind), kind)
        else:
            reader = self._reader_for(told)
            if self._streams(reader, kind, response_type):
                return self._streamed([body], reader, response_type), response_type
            if kind == PARQUET:
                table = codecs.read_parquet(body)
                data = reader.from_parquet(table)
            else:
                data = reader.decode(body, kind)
        prediction = self._predict(data)
        if "output_fn" in user:
            return _response(user["output_fn"](prediction, response_type), response_type)
        join_input = self._join_input or (told is not None and told.join_input)
        if join_input and kind == PARQUET and response_type == PARQUET:
            table = codecs.read_parquet(body) if table is None else table
            return codecs.joined_parquet(table, prediction), response_type
        return codecs.encode(prediction, response_type), response_type

    def _response_type(self, kind: str, accept: str | None) -> str:
        """The type of the answer to a request of ``kind`` that asks for ``accept``; a
        RequestError (406) when the server cannot answer in it."""
        user = self.user_functions
        custom_output = "output_fn" in user or "transform_fn" in user
        return codecs.negotiate(
            accept, self._response_default(kind), None if custom_output else _SUPPORTED_OUTPUTS
        )

    def _predict(self, data: Any) -> Any:
        """The prediction of decoded ``data``: the user's ``predict_fn`` or the model's
        method, in forward passes of the batch records where they apply."""
        user = self.user_functions
        if "predict_fn" in user:
            batch = self._batch_records if self._row_wise_predict_fn else None
            with _value_errors_refuse("predict_fn"):
                return in_batches(
                    lambda part: user["predict_fn"](part, self.model),
                    data,
                    batch,
                    size_set=self._batch_records_set,
                )
        self._check_width(data)
        with _value_errors_refuse(f"the model's {self.predict_method}"):
            predict = getattr(self.model, self.predict_method or "predict")
            return in_batches(predict, data, self._batch_records, size_set=self._batch_records_set)

    def _streams(self, reader: TableReader, kind: str, response_type: str) -> bool:
        """Whether a request is decoded, predicted and encoded a run of records at a time:
        numeric CSV records (a model without named features), answered a line per record,
        by the default output and a predict that takes records apart (the defaults, or a
        row-wise predict_fn), with a forward batch set."""
        user = self.user_functions
        return (
            self._batch_records is not None
            and kind == CSV
            and reader.features is None
            and response_type in LINE_OUTPUTS
            and "output_fn" not in user
            and ("predict_fn" not in user or self._row_wise_predict_fn)
        )

    def reads_in_runs(
        self, content_type: str | None, accept: str | None, custom_attributes: str | None
    ) -> bool:
        """Whether a request is answered a run of records at a time as its body is read
        (:meth:`answer_runs`), not read whole first: UTF-8 numeric CSV that :meth:`answer`
        would stream, with quarantine off (telling records apart needs the whole request)."""
        if self._most_refused is not None or codec_type(content_type) != CSV:
            return False
        if self.user_functions.keys() & {"transform_fn", "input_fn"}:
            return False
        try:
            if charset(content_type) != DEFAULT_CHARSET:
                return False
            response_type = self._response_type(CSV, accept)
            reader = self._reader_for(self._attributes(custom_attributes))
        except (RequestError, ValidationError):
            return False  # answer() refuses it, naming why
        return self._streams(reader, CSV, response_type)

    def answer_runs(
        self,
        chunks: Iterable[bytes],
        content_type: str | None,
        accept: str | None,
        custom_attributes: str | None = None,
    ) -> tuple[bytes, str]:
        """:meth:`answer` for a body read as ``chunks``, one that :meth:`reads_in_runs`
        takes: each run is decoded, predicted and encoded once it is read, so a worker holds
        a run of the request, not all of it."""
        response_type = self._response_type(CSV, accept)
        reader = self._reader_for(self._attributes(custom_attributes))
        return self._streamed(chunks, reader, response_type), response_type

    def _streamed(self, chunks: Iterable[bytes], reader: TableReader, response_type: str) -> bytes:
        """The response to the CSV body of ``chunks`` made a run of records at a time
        (decoded together, predicted in forward batches): the bytes of the same passes made
        after one whole decode, in memory that grows with the batch (or a run's MiB), not
        with the request. A bad record is named by its place in the request."""
        assert self._batch_records is not None
        parts = iter(chunks)
        head = next(parts, b"")
        codecs.check_not_gzip(head, CSV)
        runs = codecs.line_runs(
            itertools.chain([head], parts), _records_per_decode(head, self._batch_records)
        )
        answers, first, fields = [], 1, None
        for records in runs:
            data = codecs.decode_csv(records, reader.delimiter, first=first, fields=fields)
            del records  # a run's bytes go before the next run is read
            first, fields = first + len(data), data.shape[1]
            answers.append(codecs.encode(self._predict(data), response_type))
            del data  # and its records before the next run is decoded
        if fields is None:  # no record at all
            codecs.decode_csv(head, reader.delimiter)
        return b"".join(answers)

    @staticmethod
    def _attributes(custom_attributes: str | None) -> RequestAttributes | None:
        try:
            return attributes_of(custom_attributes)
        except ValidationError as exc:
            raise RequestError(400, str(exc)) from None

    def _reader_for(self, told: RequestAttributes | None) -> TableReader:
        if told is None:
            return self._reader
        columns = None if told.columns is None else tuple(told.columns)
        return replace(self._reader, columns=columns, delimiter=told.delimiter)

    def _response_default(self, content_type: str) -> str:
        if self._default_accept:
            return self._default_accept
        custom_output = "output_fn" in self.user_functions or "transform_fn" in self.user_functions
        if custom_output or content_type in _SUPPORTED_OUTPUTS:
            return content_type
        return JSON

    def _check_width(self, data: Any) -> None:
        """400 when the records' width is not the number of features the model declares."""
        expected = getattr(self.model, "n_features_in_", None)
        shape = getattr(data, "shape", None)
        width = shape[1] if shape is not None and len(shape) == 2 else None
        if isinstance(expected, int) and width is not None and width != expected:
            raise RequestError(
                400, f"records have {width} values each but the model expects {expected} features"
            )


@contextmanager
def _value_errors_refuse(stage: str) -> Iterator[None]:
    """Turn a ValueError (how Python code says "bad data") into a 400 naming the stage."""
    try:
        yield
    except ValueError as exc:
        raise RequestError(400, f"{stage} rejected the request: {exc}") from exc


def _utf8(body: bytes, kind: str, content_type: str | None) -> bytes:
    """A text body as UTF-8: decoded from the Content-Type's ``charset`` when it names
    another encoding (400 naming the record that is not in it)."""
    try:
        encoding = charset(content_type)
    except ValidationError as exc:
        raise RequestError(400, str(exc)) from None
    if encoding == DEFAULT_CHARSET:
        return body
    try:
        return body.decode(encoding).encode("utf-8")
    except UnicodeDecodeError as exc:
        record = body.count(b"\n", 0, exc.start) + 1
        raise RequestError(
            400, f"{kind} record {record} is not {encoding} text: {exc.reason}"
        ) from None


def _user_body(body: bytes, content_type: str) -> str | bytes:
    if content_type not in codecs.TEXT_TYPES:
        return body
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"{content_type} body is not UTF-8 text: {exc}") from None


def _response(result: Any, content_type: str) -> tuple[bytes, str]:
    """Normalise what a user ``output_fn``/``transform_fn`` returned."""
    if isinstance(result, tuple) and len(result) == 2:
        result, content_type = result
    if isinstance(result, str):
        return result.encode("utf-8"), content_type
    if isinstance(result, bytes | bytearray | memoryview):
        return bytes(result), content_type
    raise TypeError(
        f"the user module returned {type(result).__name__}; "
        "return bytes, str or (body, content_type)"
    )


def _import_user_module(path: Path) -> ModuleType:
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ModelLoadError(f"{path}: import failed: {type(exc).__name__}: {exc}") from exc
    return module


def _refused_record(exc: Exception) -> str | None:
    """Why ``exc`` refused a request for its records (a 400), or None: any other status, or
    an error of the model (500), is not a record's to be set aside."""
    if isinstance(exc, RequestError) and exc.status == 400:
        return exc.message
    return None


def _refused_whole(refusal: RequestError, why: str) -> RequestError:
    return RequestError(refusal.status, f"{refusal.message}; {why}")


def load_handler(model_dir: Path, env: Mapping[str, str] | None = None) -> InferenceHandler:
    """Load the model of ``model_dir`` and its user module (if any) into a handler.

    ``env`` (default: the process environment) supplies SAGEMAKER_PROGRAM,
    BATCHINFER_PREDICT_METHOD, SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT,
    BATCHINFER_MAX_BATCH_RECORDS, BATCHINFER_JOIN_SOURCE and BATCHINFER_REQUIREMENTS_TARGET
    (:mod:`~batchinfer.serving.model_requirements`). Raises :class:`ModelLoadError` saying
    what is missing or broken.
    """
    env = os.environ if env is None else env
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise ModelLoadError(f"model directory {model_dir} does not exist")
    ensure_requirements(model_dir, env)  # code/requirements.txt, before the user module
    module_path = find_user_module(model_dir, env)
    module = _import_user_module(module_path) if module_path else None
    context = HandlerContext({"model_dir": str(model_dir), "gpu_id": _gpu_id()})
    functions = {
        name: _with_context(getattr(module, name), arguments, context)
        for name, arguments in USER_FUNCTIONS.items()
        if callable(getattr(module, name, None))
    }
    overlap = sorted(functions.keys() & {"input_fn", "predict_fn", "output_fn"})
    if "transform_fn" in functions and overlap:
        raise ModelLoadError(
            f"{module_path}: defines transform_fn and {', '.join(overlap)}; "
            "transform_fn replaces input_fn, predict_fn and output_fn: keep one or the other"
        )
    if "model_fn" in functions:
        try:
            model = functions["model_fn"](str(model_dir))
        except Exception as exc:
            raise ModelLoadError(
                f"{module_path}: model_fn failed: {type(exc).__name__}: {exc}"
            ) from exc
    else:
        model = load_model(model_dir)
    uses_default_predict = not functions.keys() & {"predict_fn", "transform_fn"}
    method = predict_method(model, env) if uses_default_predict else None
    default_accept = codec_type(env.get(DEFAULT_ACCEPT_VAR))
    try:
        reader = TableReader.for_model(model, env) if "input_fn" not in functions else None
        batch_records = max_batch_records(env)
        most_refused = max_bad_records(env)
    except ValidationError as exc:
        raise ModelLoadError(str(exc)) from exc
    LOG.info(
        "loaded %s from %s%s",
        type(model).__name__,
        model_dir,
        f"; {module_path} defines {', '.join(functions)}" if module_path else "",
    )
    return InferenceHandler(
        model,
        functions,
        predict_method=method,
        default_accept=default_accept,
        reader=reader,
        batch_records=batch_records,
        batch_records_set=forward_batch_set(env),
        most_refused=most_refused,
        row_wise_predict_fn=getattr(module, ROW_WISE_FLAG, False) is True,
        join_input=env.get(JOIN_SOURCE_VAR) == "Input",
    )


def _gpu_id() -> int | None:
    """The GPU this worker's PyTorch uses, when PyTorch is loaded (by the user module) and
    sees one; else None."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return int(torch.cuda.current_device())
