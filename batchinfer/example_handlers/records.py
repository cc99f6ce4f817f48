"""How the example handlers read request bodies and write answers (``input_fn``,
``output_fn`` of SageMaker's handler protocol).

Bodies: ``text/csv`` (numbers, no header), ``application/jsonlines`` (each line a list of
numbers or an object with a ``features`` list) or ``application/json`` (a list of records or
``{"instances": [...]}``). Answers hold one line per record for CSV and JSON Lines (the
probability of the positive class, 6 decimals), one JSON list for JSON.
"""

import io
import json

import numpy as np


def _features(record):
    return record["features"] if isinstance(record, dict) else record


def input_fn(body, content_type):
    """The records of ``body`` as a 2-D float array."""
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    if content_type == "text/csv":
        return np.loadtxt(io.StringIO(text), delimiter=",", ndmin=2, dtype=np.float64)
    if content_type == "application/jsonlines":
        rows = [_features(json.loads(line)) for line in text.splitlines() if line.strip()]
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
    if content_type == "application/json":
        document = json.loads(text)
        rows = document["instances"] if isinstance(document, dict) else document
        return np.asarray([_features(r) for r in rows], dtype=np.float64).reshape(len(rows), -1)
    raise ValueError(f"content type {content_type} is not supported by this model")


def output_fn(prediction, accept):
    """One answer line per record for CSV and JSON Lines; one JSON list for JSON."""
    scores = [round(float(p), 6) for p in np.asarray(prediction).reshape(-1)]
    if accept == "application/json":
        return json.dumps(scores), accept
    if accept == "application/jsonlines":
        return "".join(json.dumps({"score": s}) + "\n" for s in scores), accept
    return "".join(f"{s}\n" for s in scores), "text/csv"
