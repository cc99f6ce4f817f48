"""Model M of the spec's worked examples ("row-sum"), as an in-process ``invoke``."""

import json
from collections.abc import Callable

import pytest

from batchinfer.transform.record_errors import InvocationError


def _rows(body: bytes) -> list[str]:
    text = body.decode()
    if text.endswith("\n"):
        text = text[:-1]
    return [line.removesuffix("\r") for line in text.split("\n")]


def row_sum(content_type: str) -> Callable[[bytes], bytes]:
    """For text/csv one sum per row, rows joined by ``\\n``, no trailing newline; for JSON
    Lines ``{"score": sum}`` per line. A row containing ``bad`` gets HTTP 400 (E9)."""

    def invoke(body: bytes) -> bytes:
        if b"bad" in body:
            raise InvocationError("row cannot be parsed as numbers", status=400)
        if content_type == "text/csv":
            sums = [sum(int(f) for f in row.split(",") if f) for row in _rows(body)]
            return "\n".join(str(s) for s in sums).encode()
        scores = [{"score": sum(json.loads(row))} for row in _rows(body)]
        return "\n".join(json.dumps(s) for s in scores).encode()

    return invoke


@pytest.fixture
def model_m() -> Callable[[str], Callable[[bytes], bytes]]:
    return row_sum
