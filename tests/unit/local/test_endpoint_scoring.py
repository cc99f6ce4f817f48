"""One file scored through an endpoint's ``send``: retries of throttling and 5xx, refused
records, and stopping and resuming from a saved position (R7, R8, R17-R20, C8)."""

import gzip
import json
import threading
from collections import Counter
from pathlib import Path

import pytest

from batchinfer.endpoints.position import START, Position
from batchinfer.endpoints.scoring import partial_output, score_file
from batchinfer.errors import InputError, ValidationError
from batchinfer.transform.record_errors import RecordError
from batchinfer.transform.retry import RetryPolicy
from batchinfer.transform.settings import TransformSettings

NO_WAIT = RetryPolicy(attempts=4, base_seconds=0, jitter=True)
CSV = dict(content_type="text/csv", accept="text/csv", split_type="Line", assemble_with="Line")


class RowSum:
    """An in-process endpoint for model M: one sum per CSV row; it records every row it
    answered, refuses rows holding ``bad`` with 400 and throttles the first ``throttle``
    requests with 429."""

    def __init__(self, throttle: int = 0, failing: int | None = None):
        self.throttle, self.failing = throttle, failing
        self.answered: Counter[bytes] = Counter()
        self.requests = 0
        self._lock = threading.Lock()

    def __call__(self, body: bytes, content_type: str | None, accept: str | None):
        assert (content_type, accept) == ("text/csv", "text/csv")
        with self._lock:
            self.requests += 1
            if self.requests <= self.throttle:
                return 429, b"ThrottlingException: Rate exceeded"
            if self.failing is not None:
                return self.failing, b"upstream unavailable"
        rows = body.decode().splitlines()
        if any("bad" in row for row in rows):
            return 400, b"row holds 'bad': could not convert string to float"
        with self._lock:
            self.answered.update(row.encode() for row in rows)
        return 200, "\n".join(str(sum(int(v) for v in row.split(","))) for row in rows).encode()


def stop_after(requests: int):
    """A deadline that passes once ``requests`` requests have been asked about."""
    asked = []

    def should_stop() -> bool:
        asked.append(1)
        return len(asked) > requests

    return should_stop


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def rows(count: int) -> bytes:
    return b"".join(b"%d,%d\n" % (i, i % 7) for i in range(1, count + 1))


@pytest.mark.parametrize(
    ("settings", "count", "stop", "invocations"),
    [
        (dict(CSV, batch_strategy="SingleRecord"), 2000, 300, 7),
        (dict(CSV, batch_strategy="MultiRecord", max_payload_mb=1), 200_000, 1, 2),
        (
            dict(CSV, batch_strategy="SingleRecord", join_source="Input", output_filter="$[0,-1]"),
            2000,
            300,
            7,
        ),
        (dict(CSV, batch_strategy="SingleRecord", compression_type="Gzip"), 2000, 300, 7),
    ],
    ids=["single", "multi", "join-filter", "gzip"],
)
def test_stopping_and_resuming_gives_the_same_output_sending_no_record_twice(
    tmp_path, settings, count, stop, invocations
):
    settings = TransformSettings(**settings)
    data = rows(count)
    src = write(
        tmp_path / "in" / "d.csv",
        gzip.compress(data) if settings.compression_type == "Gzip" else data,
    )
    whole = RowSum()
    score_file(src, tmp_path / "whole.out", send=whole, settings=settings, concurrency=3)

    resumed = RowSum()
    dst = tmp_path / "resumed.out"
    saved, made = START.to_json(), 0
    while not saved["done"]:
        position = score_file(
            src,
            dst,
            send=resumed,
            settings=settings,
            position=Position.from_json(json.loads(json.dumps(saved))),
            should_stop=stop_after(stop),
            concurrency=3,
        )
        saved, made = position.to_json(), made + 1
        assert dst.exists() == position.done  # nothing partial is presented as complete
    assert made == invocations
    assert dst.read_bytes() == (tmp_path / "whole.out").read_bytes()
    assert resumed.answered == Counter(data.splitlines()) == whole.answered  # each row once
    assert saved["records_in"] == saved["records_out"] == count
    assert saved["input_bytes"] == len(data) and saved["output_bytes"] == dst.stat().st_size
    assert not partial_output(dst).exists()


def test_a_stop_before_the_first_request_sends_nothing_and_keeps_the_start(tmp_path):
    src = write(tmp_path / "d.csv", b"1,2\n")
    send = RowSum()
    settings = TransformSettings(**CSV)
    position = score_file(
        src, tmp_path / "d.out", send=send, settings=settings, should_stop=lambda: True
    )
    assert position == START and send.requests == 0
    assert score_file(src, tmp_path / "d.out", send=send, settings=settings).done
    assert (tmp_path / "d.out").read_bytes() == b"3\n"


def test_throttling_is_retried_with_backoff_then_succeeds(tmp_path):
    src = write(tmp_path / "d.csv", b"1,2\n3,4\n")
    send = RowSum(throttle=3)
    settings = TransformSettings(**CSV)
    position = score_file(src, tmp_path / "d.out", send=send, settings=settings, retry=NO_WAIT)
    assert position.done and position.requests == 1 and send.requests == 4
    assert (tmp_path / "d.out").read_bytes() == b"3\n7\n"


def test_retries_are_bounded_and_the_file_fails_naming_status_and_attempts(tmp_path):
    src = write(tmp_path / "d.csv", b"1,2\n3,4\n")
    send = RowSum(failing=503)
    with pytest.raises(RecordError, match=r"d.csv: records 1-2: .*HTTP 503: upstream .*4 attempts"):
        score_file(
            src, tmp_path / "d.out", send=send, settings=TransformSettings(**CSV), retry=NO_WAIT
        )
    assert send.requests == 4
    assert not (tmp_path / "d.out").exists() and not partial_output(tmp_path / "d.out").exists()


def test_a_refused_record_fails_the_file_naming_record_status_and_body_r19(tmp_path):
    src = write(tmp_path / "d.csv", b"1,2\n3,4\nbad,5\n6,7\n")
    send = RowSum()
    settings = TransformSettings(**CSV, batch_strategy="SingleRecord")
    with pytest.raises(RecordError) as failure:
        score_file(src, tmp_path / "d.out", send=send, settings=settings, name="in/d.csv")
    assert str(failure.value) == (
        "in/d.csv: record 3: request failed: HTTP 400: row holds 'bad': could not convert "
        "string to float"
    )
    assert send.requests == 3 and send.answered  # refused at once, not retried
    assert not (tmp_path / "d.out").exists() and not partial_output(tmp_path / "d.out").exists()


def test_requests_over_what_a_real_time_endpoint_takes_are_refused_c8(tmp_path):
    src = write(tmp_path / "d.csv", b"1,2\n")
    for mb, shown in ((7, "7"), (0, "0 \\(no limit\\)")):
        settings = TransformSettings(**CSV, max_payload_mb=mb)
        with pytest.raises(ValidationError, match=rf"max_payload_mb \(MaxPayloadInMB\): {shown}"):
            score_file(src, tmp_path / "d.out", send=RowSum(), settings=settings)


def test_a_position_past_the_input_or_its_output_is_refused_naming_the_file(tmp_path):
    src = write(tmp_path / "d.csv", b"1,2\n3,4\n")
    settings = TransformSettings(**CSV)
    with pytest.raises(InputError, match=r"d.csv: cannot resume at byte 99: .* only 8 bytes"):
        score_file(
            src,
            tmp_path / "d.out",
            send=RowSum(),
            settings=settings,
            position=Position(input_bytes=99, records_in=9),
        )
    with pytest.raises(InputError, match=r"d.out.partial: cannot resume: the output .* missing"):
        score_file(
            src,
            tmp_path / "d.out",
            send=RowSum(),
            settings=settings,
            position=Position(input_bytes=4, records_in=1, requests=1, output_bytes=2),
        )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"input_bytes": -1}, "position: input_bytes: -1 is not a whole number"),
        ({"done": "yes"}, "position: done: 'yes' is not true or false"),
        ({"offset": 3}, "position: unknown key 'offset'"),
        ([1], "position: \\[1\\] is not a JSON object"),
    ],
)
def test_a_malformed_position_is_refused_naming_the_key(data, message):
    with pytest.raises(ValidationError, match=message):
        Position.from_json(data)
