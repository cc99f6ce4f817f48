"""Model sources the tests serve with the real model server."""

import textwrap
from pathlib import Path

# Model M of the spec (section 5): for text/csv one sum per row, rows joined by "\n" and no
# trailing newline; for JSON Lines {"score": sum} per line. A row holding "bad" is refused
# with 400 (E9); "slow" makes the request sleep (for interrupting a run), while the file the
# container's SLOW_WHILE names exists where it is set; "stall" makes it sleep ten minutes (a
# request still in flight when its engine is killed), once it created the file that
# ROW_SUM_STALLED names, if set.
ROW_SUM = textwrap.dedent(
    """
    import json
    import os
    import time


    def model_fn(model_dir):
        return sum


    def _numbers(value):
        if isinstance(value, dict):
            value = value.get("f", list(value.values()))
        return [float(v) for v in (value if isinstance(value, list) else [value])]


    def input_fn(body, content_type):
        text = body.decode() if isinstance(body, bytes) else body
        if "bad" in text:
            raise ValueError("row holds 'bad'")
        if "stall" in text:
            if os.environ.get("ROW_SUM_STALLED"):
                open(os.environ["ROW_SUM_STALLED"], "w").close()
            time.sleep(600)
        if "slow" in text:
            flag = os.environ.get("SLOW_WHILE")
            if flag is None or os.path.exists(flag):
                time.sleep(0.5)
            text = text.replace("slow", "0")
        lines = text.split("\\n")
        if content_type == "text/csv":
            return "csv", [_numbers(line.split(",")) for line in lines if line.strip()]
        if content_type == "application/jsonlines":
            return "jsonl", [_numbers(json.loads(line)) for line in lines if line.strip()]
        return "json", [_numbers(json.loads(text))]


    def predict_fn(data, model):
        kind, rows = data
        return kind, [model(row) for row in rows]


    def _fmt(x):
        return str(int(x)) if float(x).is_integer() else repr(x)


    def output_fn(prediction, accept):
        kind, sums = prediction
        if kind == "csv":
            return "\\n".join(_fmt(s) for s in sums)
        return "\\n".join(json.dumps({"score": int(s) if s.is_integer() else s}) for s in sums)
    """
)


# Model W: for text/csv each row "value,width" answers ``value`` right-aligned in ``width``
# characters, so a test chooses how large each shard's output is.
WIDE = textwrap.dedent(
    """
    def model_fn(model_dir):
        return None


    def input_fn(body, content_type):
        text = body.decode() if isinstance(body, bytes) else body
        return [line.split(",") for line in text.split("\\n") if line.strip()]


    def predict_fn(rows, model):
        return [value.rjust(int(width), ".") for value, width in rows]


    def output_fn(prediction, accept):
        return "\\n".join(prediction)
    """
)


def write_row_sum_model(model_dir: Path) -> Path:
    """Model M as a model directory with ``code/inference.py``."""
    return write_model(model_dir, ROW_SUM)


# Model E, "echo": answers each request with its body, byte for byte, so the output shows
# exactly what the container received.
ECHO = textwrap.dedent(
    """
    def model_fn(model_dir):
        return None


    def transform_fn(model, body, content_type, accept):
        data = body.encode() if isinstance(body, str) else bytes(body)
        return data, accept or content_type
    """
)


# Model B, "brackets": answers each request with its body between "[" and "]", so the output
# shows where one request ends and the next begins.
BRACKETS = textwrap.dedent(
    """
    def model_fn(model_dir):
        return None


    def transform_fn(model, body, content_type, accept):
        data = body.encode() if isinstance(body, str) else bytes(body)
        return b"[" + data + b"]", accept or content_type
    """
)


def write_model(model_dir: Path, source: str) -> Path:
    """A model directory whose ``code/inference.py`` is ``source``."""
    (model_dir / "code").mkdir(parents=True)
    (model_dir / "code" / "inference.py").write_text(source)
    return model_dir
