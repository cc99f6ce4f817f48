"""Named features: what the default handler gives a model fitted on a pandas DataFrame.

A model that knows its features' names (``feature_names_in_``: scikit-learn estimators and
Pipelines fitted on a DataFrame, XGBoost and LightGBM wrappers; a booster saved with feature
names) gets a DataFrame of exactly those columns, in its order, chosen by name:

- CSV records are named by the header the engine read (``BATCHINFER_CSV_COLUMNS``), whatever
  the file's column order, or, without one, by the model's names in position; values keep
  their types (numbers, booleans, text: a categorical column stays text);
- JSON objects (JSON Lines, or ``{"instances": [...]}``) by key, never by key order; arrays
  of numbers by position;
- Parquet columns by name, with the types the file gives them (a dictionary column arrives
  as a pandas category);
- a column the model needs and the data lacks is a 400 naming it;
- a boosting model fitted on pandas categories (LightGBM's ``pandas_categorical``, XGBoost's
  ``c`` feature types) gets those columns as categories, which it matches by value to the
  ones it was trained on.

A model fitted on an array gets today's float64 array (the fast path, untouched): CSV fields
in file order, with the header's delimiter.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from batchinfer.media_types import CSV, JSON, JSONLINES, NPY, PARQUET
from batchinfer.serving import codecs
from batchinfer.serving.server_errors import RequestError
from batchinfer.transform.csv_dialect import (
    DEFAULT_DELIMITER,
    columns_from_environment,
    delimiter_from_environment,
)

# Categories: every text column (LightGBM aligns a frame's category columns, in order, with
# the ones it was trained on), or the features named.
TEXT_COLUMNS = "text"
Categories = frozenset[str] | str | None


def feature_names(model: Any) -> tuple[str, ...] | None:
    """The names of the features ``model`` was fitted on, in its order, or None."""
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return None
    return tuple(str(name) for name in names)


def category_features(model: Any, features: tuple[str, ...] | None) -> Categories:
    """Which features ``model`` reads as pandas categories: XGBoost's of type ``c``, every
    text column for a LightGBM model trained on pandas categories, else None."""
    booster = _booster(model)
    types = getattr(booster, "feature_types", None)
    if features and types and "c" in types:
        return frozenset(name for name, kind in zip(features, types, strict=False) if kind == "c")
    if getattr(booster, "pandas_categorical", None):
        return TEXT_COLUMNS
    return None


def _booster(model: Any) -> Any:
    """The XGBoost or LightGBM booster behind ``model``, or None."""
    get_booster = getattr(model, "get_booster", None)  # XGBoost's scikit-learn wrappers
    if callable(get_booster):
        return get_booster()
    for attribute in ("booster_", "booster"):  # LightGBM's wrappers; BoosterModel
        booster = getattr(model, attribute, None)
        if booster is not None and not isinstance(booster, str):
            return booster
    return None


@dataclass(frozen=True)
class TableReader:
    """Decodes request bodies for one model: by name when it has ``features``."""

    features: tuple[str, ...] | None
    columns: tuple[str, ...] | None  # the header's names, as the records hold them
    delimiter: str = DEFAULT_DELIMITER
    categories: Categories = None

    @classmethod
    def for_model(cls, model: Any, env: Mapping[str, str]) -> "TableReader":
        columns = columns_from_environment(env)
        features = feature_names(model)
        return cls(
            features,
            None if columns is None else tuple(columns),
            delimiter_from_environment(env),
            category_features(model, features),
        )

    def decode(self, body: bytes, content_type: str) -> Any:
        """The model's input for one request body of ``content_type`` (lower case, no
        parameters; the body UTF-8 if it is text)."""
        if self.features is None and self.delimiter == DEFAULT_DELIMITER:
            return codecs.decode(body, content_type)
        if content_type == CSV:
            codecs.check_not_gzip(body, content_type)
            if self.features is None:
                return codecs.decode_csv(body, self.delimiter)
            return self._categorised(self._csv_frame(body, self.features))
        if self.features is None:
            return codecs.decode(body, content_type)
        if content_type in (JSONLINES, JSON):
            codecs.check_not_gzip(body, content_type)
            parse = codecs.parse_jsonlines if content_type == JSONLINES else codecs.parse_json
            frame = _records_frame(parse(body), self.features, content_type)
            return self._categorised(frame)
        if content_type == NPY:
            return _matrix_frame(codecs.decode_npy(body), self.features, content_type)
        if content_type == PARQUET:
            return self.from_parquet(codecs.read_parquet(body))
        return codecs.decode(body, content_type)  # a type no default decoder reads: 415

    def from_parquet(self, table: Any) -> Any:
        """The model's input from a Parquet request's table: its columns by name for a
        model with features, else as numbers in the file's order."""
        if self.features is None:
            return codecs.parquet_matrix(table)
        _check_present(self.features, table.column_names, PARQUET)
        return self._categorised(table.select(list(self.features)).to_pandas())

    def _categorised(self, frame: Any) -> Any:
        """``frame`` with the columns the model reads as categories made categories."""
        if self.categories is None:
            return frame
        if self.categories == TEXT_COLUMNS:
            names = [n for n in frame.columns if _is_text(frame[n])]
        else:
            names = [n for n in frame.columns if n in self.categories]
        return frame.astype(dict.fromkeys(names, "category")) if names else frame

    def _csv_frame(self, body: bytes, features: tuple[str, ...]) -> Any:
        if self.columns is None:
            _check_not_header(body, features, self.delimiter)
        names = list(self.columns or features)
        table = codecs.read_csv_table(body, names, self.delimiter)
        _check_present(features, names, "text/csv")
        return table.select(list(features)).to_pandas()


def _check_not_header(body: bytes, features: tuple[str, ...], delimiter: str) -> None:
    """A 400 for a first record that holds the model's feature names: a header row sent as
    a record (the platform sends every line; the run needs to be told)."""
    end = body.find(b"\n")
    fields = codecs.csv_fields(1, body if end < 0 else body[:end], delimiter)
    if set(features) <= {field.strip() for field in fields}:
        raise RequestError(
            400,
            "text/csv record 1 holds the model's feature names: it is a header row; "
            "pass --header (a run request's header) so that it names the columns instead",
        )


def _records_frame(records: list[Any], features: tuple[str, ...], kind: str) -> Any:
    """JSON records as the model's frame: objects by key, numbers or arrays by position."""
    objects = [isinstance(record, dict) for record in records]
    if not any(objects):
        return _matrix_frame(codecs.records_to_matrix(records, kind), features, kind)
    if not all(objects):
        number = objects.index(not objects[0]) + 1
        raise RequestError(
            400,
            f"{kind} record {number} is {'not ' if objects[0] else ''}an object where record 1 "
            f"is {'' if objects[0] else 'not '}one; records are all objects (named features) "
            "or all arrays",
        )
    import pandas as pd

    frame = pd.DataFrame.from_records(records)
    _check_present(features, [str(name) for name in frame.columns], kind)
    return frame[list(features)]


def _matrix_frame(matrix: np.ndarray, features: tuple[str, ...], kind: str) -> Any:
    """Records of numbers by position, named as the model's features."""
    if matrix.ndim != 2 or matrix.shape[1] != len(features):
        width = matrix.shape[1] if matrix.ndim == 2 else matrix.shape[1:]
        raise RequestError(
            400,
            f"{kind} records have {width} values each but the model expects "
            f"{len(features)} features: {_listing(features)}",
        )
    import pandas as pd

    return pd.DataFrame(matrix, columns=list(features))


def _is_text(column: Any) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_string_dtype(column.dtype))


def _check_present(features: tuple[str, ...], names: list[str], kind: str) -> None:
    present = set(names)
    missing = [name for name in features if name not in present]
    if missing:
        raise RequestError(
            400,
            f"{kind} records have no column {missing[0]!r}, a feature the model needs"
            f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}; "
            f"they hold {_listing(names)}",
        )


def _listing(names: tuple[str, ...] | list[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")
