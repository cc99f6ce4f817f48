"""DataProcessing of a transform job: input filter, join and output filter (spec R15-R18: where
filters and joins apply and what they do).

CSV records are RFC 4180 rows (arrays of strings); JSON and JSON Lines records are parsed
JSON values, re-serialised compactly. A record keeps its line terminator through the input
filter; joined or filtered output records end with ``\\n`` when SplitType is Line.
"""

import csv
import json
from typing import Any

from batchinfer.errors import InputError
from batchinfer.media_types import CSV, media_type
from batchinfer.transform.record_errors import RecordError
from batchinfer.transform.records import Batch
from batchinfer.transform.settings import TransformSettings


class DataProcessing:
    """The R15-R18 steps of one job for one file (``name`` is used in errors)."""

    def __init__(self, settings: TransformSettings, name: str):
        self.name = name
        self.join = settings.join_source == "Input" and not settings.server_joins
        self.line_records = settings.split_type == "Line"
        self.input_csv = media_type(settings.content_type) == CSV
        self.output_csv = media_type(settings.accept) == CSV
        self.input_filter = None if settings.input_path.is_root else settings.input_path
        self.output_filter = None if settings.output_path.is_root else settings.output_path
        # The key order of the object the input filter's ``*`` spread in the file's first
        # record: its values go to the model in that order (checked for every record).
        self._spread_keys: tuple[str, ...] | None = None

    @property
    def filters_input(self) -> bool:
        return self.input_filter is not None

    @property
    def transforms_output(self) -> bool:
        return self.join or self.output_filter is not None

    def filter_record(self, record: bytes, number: int) -> bytes:
        """Apply the InputFilter to one record (R16: the filters take a small subset of JSONPath),
        keeping its line terminator."""
        assert self.input_filter is not None
        text, terminator = _split_terminator(self._decode(record, number))
        parsed = self._parse_record(text, number)
        try:
            selected = self.input_filter.apply(parsed)
        except InputError as exc:
            raise RecordError(self.name, number, str(exc)) from None
        if not self.input_csv:
            self._check_spread_keys(parsed, number)
        return (self._serialise(selected, self.input_csv) + terminator).encode()

    def _check_spread_keys(self, record: Any, number: int) -> None:
        """Refuse a record whose object the filter's ``*`` spreads has other keys, or its keys
        in another order, than the file's first such record: its values would reach the model
        in another order, silently (features are named by key, not by position)."""
        assert self.input_filter is not None
        keys = self.input_filter.spread_keys(record)
        if keys is None:
            return
        if self._spread_keys is None:
            self._spread_keys = keys
        elif keys != self._spread_keys:
            spread = self.input_filter.expression.split("*")[0].rstrip(".[")
            order = "in another order" if set(keys) == set(self._spread_keys) else "other keys"
            raise RecordError(
                self.name,
                number,
                f"{self.input_filter.expression} takes the values of {spread}, whose keys are "
                f"{order} than in the first record ({', '.join(keys[:6])} vs "
                f"{', '.join(self._spread_keys[:6])}): their positions would change; filter "
                f"with {spread} instead, and a model fitted on a DataFrame gets them by name",
            )

    def process_response(self, batch: Batch, response: bytes) -> bytes:
        """Join each prediction of ``response`` with its input record (R17: a CSV join adds the
        prediction to its row, one line per record; R18: a JSON join puts the prediction under
        SageMakerOutput), then apply the OutputFilter; returns the output bytes of the batch."""
        first, last = batch.first_record, batch.last_record
        text = self._decode(response, first, last)
        predictions = _lines(text) if self.line_records else [text]
        matched = len(predictions) == batch.record_count
        if self.join and not matched:
            raise RecordError(
                self.name,
                first,
                f"the model returned {len(predictions)} predictions for "
                f"{batch.record_count} records; a join needs one per record",
                last,
            )
        originals = batch.records or ()
        lines = []
        for i, prediction in enumerate(predictions):
            number = first + i if matched else first
            try:
                value = self._parse_prediction(prediction, number)
                if self.join:
                    value = self._join(originals[i], value, number)
                if self.output_filter is not None:
                    value = self.output_filter.apply(value)
            except InputError as exc:
                if isinstance(exc, RecordError):
                    raise
                raise RecordError(self.name, number, str(exc)) from None
            lines.append(self._serialise(value, self.output_csv))
        output = "\n".join(lines)
        return (output + "\n" if self.line_records else output).encode()

    def _join(self, original: bytes, prediction: Any, number: int) -> Any:
        record = self._parse_record(_split_terminator(self._decode(original, number))[0], number)
        if self.input_csv:
            return record + prediction
        if isinstance(record, dict):
            record["SageMakerOutput"] = prediction
            return record
        return {"SageMakerInput": record, "SageMakerOutput": prediction}

    def _parse_record(self, text: str, number: int) -> Any:
        return self._parse(text, self.input_csv, number, "record")

    def _parse_prediction(self, text: str, number: int) -> Any:
        return self._parse(text, self.output_csv, number, "prediction")

    def _parse(self, text: str, is_csv: bool, number: int, what: str) -> Any:
        try:
            if is_csv:
                if '"' not in text:  # no quoted fields: RFC 4180 reduces to a split
                    return text.split(",") if text else []
                return next(csv.reader([text], strict=True), [])
            return json.loads(text)
        except (csv.Error, ValueError) as exc:
            kind = "a CSV row" if is_csv else "JSON"
            raise RecordError(self.name, number, f"{what} is not {kind}: {exc}") from None

    @staticmethod
    def _serialise(value: Any, is_csv: bool) -> str:
        if is_csv:
            return _csv_row(value if isinstance(value, list) else [value])
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def _decode(self, data: bytes, first: int, last: int | None = None) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(self.name, first, f"is not UTF-8 text: {exc}", last) from None


def _split_terminator(text: str) -> tuple[str, str]:
    if text.endswith("\r\n"):
        return text[:-2], "\r\n"
    if text.endswith("\n"):
        return text[:-1], "\n"
    return text, ""


def _lines(text: str) -> list[str]:
    """One prediction per line; a single final newline ends the last line."""
    if text.endswith("\n"):
        text = text[:-1]
    return [line.removesuffix("\r") for line in text.split("\n")]


def _csv_row(fields: list[Any]) -> str:
    """RFC 4180 serialisation, quoting only fields that need it (as csv.QUOTE_MINIMAL)."""
    if fields == [""]:
        return '""'
    try:
        texts, line = fields, ",".join(fields)
    except TypeError:  # numbers or nested values selected from JSON
        texts = [f if isinstance(f, str) else json.dumps(f, ensure_ascii=False) for f in fields]
        line = ",".join(texts)
    if line.count(",") == len(texts) - 1 and not any(c in line for c in '"\r\n'):
        return line
    return ",".join(_csv_field(text) for text in texts)


def _csv_field(text: str) -> str:
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text
