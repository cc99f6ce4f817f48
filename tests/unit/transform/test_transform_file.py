"""One file through a transform job, against model M: worked examples E1-E4, E6, E8, E9 and
rules R9, R11-R14, R19, R20."""

import gzip
import io
import random
import threading
import time

import pytest

from batchinfer.errors import InputError, ValidationError
from batchinfer.transform import (
    InvocationError,
    RecordError,
    TransformSettings,
    assemble,
    output_name,
    transform_file,
    transform_stream,
)

CSV = dict(content_type="text/csv", accept="text/csv")
JSONL = dict(content_type="application/jsonlines", accept="application/jsonlines")


def run_file(tmp_path, name, data, invoke, **settings_kwargs):
    src = tmp_path / "in" / name
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(data)
    dst = tmp_path / "out" / output_name(name)
    settings = TransformSettings(**settings_kwargs)
    stats = transform_file(
        src, dst, settings=settings, effective=settings.resolve(), invoke=invoke, name=name
    )
    return dst.read_bytes(), stats


def test_e1_csv_join_with_input_and_output_filters(tmp_path, model_m):
    seen = []

    def invoke(body):
        seen.append(body)
        return model_m("text/csv")(body)

    common = dict(
        **CSV,
        split_type="Line",
        assemble_with="Line",
        batch_strategy="MultiRecord",
        max_payload_mb=1,
        input_filter="$[1:]",
        join_source="Input",
    )
    data = b"id1,1,2\nid2,3,4\nid3,5,6\n"
    out, stats = run_file(tmp_path, "data.csv", data, invoke, **common, output_filter="$[0,-1]")
    assert seen == [b"1,2\n3,4\n5,6\n"]
    assert out == b"id1,3\nid2,7\nid3,11\n"
    assert (stats.records_in, stats.records_out, stats.requests) == (3, 3, 1)
    assert (stats.bytes_in, stats.bytes_out) == (len(data), len(out))
    out, _ = run_file(tmp_path, "data.csv", data, model_m("text/csv"), **common)
    assert out == b"id1,1,2,3\nid2,3,4,7\nid3,5,6,11\n"


def test_e2_json_lines_join(tmp_path, model_m):
    common = dict(
        **JSONL,
        split_type="Line",
        assemble_with="Line",
        batch_strategy="SingleRecord",
        join_source="Input",
    )
    invoke = model_m("application/jsonlines")
    record = b'{"id":"a","f":[1,2]}\n'
    out, _ = run_file(tmp_path, "r.jsonl", record, invoke, **common, input_filter="$.f")
    assert out == b'{"id":"a","f":[1,2],"SageMakerOutput":{"score":3}}\n'
    out, _ = run_file(
        tmp_path,
        "r.jsonl",
        record,
        invoke,
        **common,
        input_filter="$.f",
        output_filter="$['id','SageMakerOutput']",
    )
    assert out == b'{"id":"a","SageMakerOutput":{"score":3}}\n'
    out, _ = run_file(tmp_path, "arr.jsonl", b"[5,6]\n", invoke, **common)
    assert out == b'{"SageMakerInput":[5,6],"SageMakerOutput":{"score":11}}\n'


@pytest.mark.parametrize(("assemble_with", "expected"), [("None", b"3\n7"), ("Line", b"3\n7\n")])
def test_e3_split_none_is_one_request(tmp_path, model_m, assemble_with, expected):
    calls = []

    def invoke(body):
        calls.append(body)
        return model_m("text/csv")(body)

    out, stats = run_file(
        tmp_path, "d.csv", b"1,2\n3,4\n", invoke, **CSV, assemble_with=assemble_with
    )
    assert out == expected and calls == [b"1,2\n3,4\n"]
    assert stats.records_in == 1 and stats.requests == 1
    assert stats.records_out is None  # R17: one request for the whole file, lines not records


@pytest.mark.parametrize(
    ("strategy", "assemble_with", "expected", "requests"),
    [
        ("SingleRecord", "None", b"3711", 3),
        ("SingleRecord", "Line", b"3\n7\n11\n", 3),
        ("MultiRecord", "None", b"3\n7\n11", 1),
        ("MultiRecord", "Line", b"3\n7\n11\n", 1),
    ],
)
def test_e4_r13_batch_strategy_and_assembly(
    tmp_path, model_m, strategy, assemble_with, expected, requests
):
    out, stats = run_file(
        tmp_path,
        "d.csv",
        b"1,2\n3,4\n5,6\n",
        model_m("text/csv"),
        **CSV,
        split_type="Line",
        batch_strategy=strategy,
        assemble_with=assemble_with,
    )
    assert out == expected
    assert stats.requests == requests and stats.records_in == 3


def test_e6_r11_gzip_input_is_decompressed_and_output_is_plain(tmp_path, model_m):
    seen = []

    def invoke(body):
        seen.append(body)
        return model_m("text/csv")(body)

    out, stats = run_file(
        tmp_path,
        "d.csv.gz",
        gzip.compress(b"1,2\n3,4\n"),
        invoke,
        **CSV,
        split_type="Line",
        batch_strategy="MultiRecord",
        assemble_with="Line",
        compression_type="Gzip",
    )
    assert seen == [b"1,2\n3,4\n"]
    assert out == b"3\n7\n"
    assert (tmp_path / "out" / "d.csv.gz.out").exists() and stats.bytes_in == 8


def test_r11_corrupt_gzip_fails_naming_the_file(tmp_path, model_m):
    with pytest.raises(InputError, match=r"d.csv.gz: not a valid gzip file"):
        run_file(
            tmp_path, "d.csv.gz", b"not gzip at all", model_m("text/csv"), compression_type="Gzip"
        )
    truncated = gzip.compress(b"1,2\n" * 1000)[:-20]
    with pytest.raises(InputError, match=r"d.csv.gz: not a valid gzip file"):
        run_file(tmp_path, "d.csv.gz", truncated, model_m("text/csv"), compression_type="Gzip")
    assert list((tmp_path / "out").iterdir()) == []


def test_e8_oversize_record_fails_only_that_file(tmp_path, model_m):
    common = dict(**CSV, split_type="Line", assemble_with="Line", max_payload_mb=1)
    big = b"1,2\n" + b"1," * (1024 * 1024) + b"1\n"
    with pytest.raises(RecordError, match=r"big.csv: record 2: is larger than MaxPayloadInMB=1"):
        run_file(tmp_path, "big.csv", big, model_m("text/csv"), **common)
    out, _ = run_file(tmp_path, "small.csv", b"1,2\n", model_m("text/csv"), **common)
    assert out == b"3\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["small.csv.out"]


def test_e9_r19_failing_request_leaves_no_output_and_no_temp_file(tmp_path, model_m):
    common = dict(**CSV, split_type="Line", assemble_with="Line", batch_strategy="SingleRecord")
    bad = b"1,2\n3,4\nbad,5\n6,7\n"
    with pytest.raises(RecordError) as info:
        run_file(tmp_path, "bad.csv", bad, model_m("text/csv"), **common)
    message = str(info.value)
    assert "bad.csv: record 3: request failed: HTTP 400" in message
    assert info.value.first_record == 3
    run_file(tmp_path, "good.csv", b"1,2\n", model_m("text/csv"), **common)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["good.csv.out"]


def test_r19_failure_names_the_record_range_of_a_multi_record_request(tmp_path, model_m):
    with pytest.raises(RecordError, match=r"bad.csv: records 1-3: request failed"):
        run_file(
            tmp_path,
            "bad.csv",
            b"1,2\nbad\n3,4\n",
            model_m("text/csv"),
            **CSV,
            split_type="Line",
            assemble_with="Line",
        )


def refuse_empty_csv_records(body: bytes) -> bytes:
    """As the default handler answers an empty CSV record: 400, numbered in the request."""
    for number, line in enumerate(body.split(b"\n")[:-1], start=1):
        if line in (b"", b"\r"):
            raise InvocationError(f"text/csv record {number} is empty", status=400)
    return b"\n".join(b"1" for _ in body.splitlines())


def test_r6_r19_a_request_failing_on_an_empty_line_names_it_and_how_to_skip_it(tmp_path):
    """The server numbers records within its request; the error names the file's record."""
    with pytest.raises(RecordError) as info:
        run_file(
            tmp_path, "a.csv", b"1,2\n3,4\n5,6\n\n", refuse_empty_csv_records, **CSV,
            split_type="Line", assemble_with="Line", batch_strategy="MultiRecord",
            max_payload_mb=0,
        )  # fmt: skip
    assert str(info.value) == (
        "a.csv: record 4: is an empty line, and with split_type (SplitType) Line every line is "
        "a record: remove empty lines from the input, or skip them with --skip-blank-lines "
        "(batchinfer run); the request of records 1-4 failed: HTTP 400: text/csv record 4 is "
        "empty"
    )


def test_r6_skip_blank_lines_scores_a_file_with_empty_lines_as_one_without(tmp_path):
    settings = TransformSettings(**CSV, split_type="Line", assemble_with="Line")
    src = tmp_path / "a.csv"
    src.write_bytes(b"1,2\n\n3,4\r\n\r\n")
    stats = transform_file(
        src, tmp_path / "a.csv.out", settings=settings, effective=settings.resolve(),
        invoke=refuse_empty_csv_records, skip_blank_lines=True,
    )  # fmt: skip
    assert (tmp_path / "a.csv.out").read_bytes() == b"1\n1\n"
    assert (stats.records_in, stats.records_out, stats.bytes_in) == (2, 2, 12)


def test_r19_handler_exceptions_fail_the_request(tmp_path):
    def invoke(body):
        raise ValueError("model cannot score this")

    with pytest.raises(RecordError, match=r"record 1: request failed: ValueError: model cannot"):
        run_file(tmp_path, "x.csv", b"1\n", invoke, split_type="Line")


def test_output_records_must_equal_input_records_with_line_split_and_assembly(tmp_path):
    """Verification: a response with more lines than its records fails the file."""
    with pytest.raises(RecordError, match=r"x.csv: records 1-2: the model returned 3 output"):
        run_file(
            tmp_path,
            "x.csv",
            b"1\n2\n",
            lambda body: b"a\nb\nc",
            split_type="Line",
            assemble_with="Line",
        )
    assert list((tmp_path / "out").iterdir()) == []


def test_r9_r14_concurrent_requests_keep_input_order(model_m):
    """Up to MaxConcurrentTransforms requests in flight; output order never changes."""
    rows = [f"{i},{i}\n".encode() for i in range(60)]
    in_flight, peak, lock = [0], [0], threading.Lock()
    jitter = random.Random(7)
    delays = [jitter.random() / 200 for _ in rows]
    row_sum = model_m("text/csv")

    def invoke(body):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(delays[int(body.split(b",")[0])])
        with lock:
            in_flight[0] -= 1
        return row_sum(body)

    settings = TransformSettings(
        **CSV,
        split_type="Line",
        assemble_with="Line",
        batch_strategy="SingleRecord",
        max_concurrent_transforms=4,
    )
    sink = io.BytesIO()
    stats = transform_stream(
        io.BytesIO(b"".join(rows)),
        sink,
        settings=settings,
        effective=settings.resolve(),
        invoke=invoke,
        name="c.csv",
    )
    assert sink.getvalue() == b"".join(f"{2 * i}\n".encode() for i in range(60))
    assert 1 < peak[0] <= 4
    assert stats.requests == 60 and stats.records_out == 60


def test_r20_retryable_failures_are_retried_then_succeed():
    attempts = []

    def invoke(body):
        attempts.append(body)
        if len(attempts) < 3:
            raise InvocationError("service unavailable", status=503, retryable=True)
        return b"ok"

    settings = TransformSettings(invocations_max_retries=2)
    sink = io.BytesIO()
    transform_stream(
        io.BytesIO(b"x"),
        sink,
        settings=settings,
        effective=settings.resolve(),
        invoke=invoke,
        name="f",
        retry_backoff_seconds=0,
    )
    assert sink.getvalue() == b"ok" and len(attempts) == 3


def test_r20_retries_are_bounded_and_4xx_is_never_retried():
    attempts = []

    def unavailable(body):
        attempts.append(body)
        raise InvocationError("service unavailable", status=503, retryable=True)

    settings = TransformSettings(invocations_max_retries=3)
    with pytest.raises(RecordError, match="HTTP 503: service unavailable \\(after 4 attempts\\)"):
        transform_stream(
            io.BytesIO(b"x"),
            io.BytesIO(),
            settings=settings,
            effective=settings.resolve(),
            invoke=unavailable,
            name="f",
            retry_backoff_seconds=0,
        )
    assert len(attempts) == 4
    attempts.clear()

    def rejected(body):
        attempts.append(body)
        raise InvocationError("bad request", status=400)

    with pytest.raises(RecordError, match=r"HTTP 400: bad request$"):
        transform_stream(
            io.BytesIO(b"x"),
            io.BytesIO(),
            settings=settings,
            effective=settings.resolve(),
            invoke=rejected,
            name="f",
        )
    assert len(attempts) == 1


def test_empty_line_file_writes_an_empty_output(tmp_path, model_m):
    out, stats = run_file(
        tmp_path, "e.csv", b"", model_m("text/csv"), split_type="Line", assemble_with="Line"
    )
    assert out == b"" and stats.records_in == 0 and stats.requests == 0


def test_missing_input_file_is_named(tmp_path, model_m):
    settings = TransformSettings()
    with pytest.raises(InputError, match=r"nope.csv: cannot read"):
        transform_file(
            tmp_path / "nope.csv",
            tmp_path / "nope.csv.out",
            settings=settings,
            effective=settings.resolve(),
            invoke=model_m("text/csv"),
            name="nope.csv",
        )


def test_r13_assembly():
    assert assemble(b"3\n7", "None") == b"3\n7"
    assert assemble(b"3\n7", "Line") == b"3\n7\n"
    assert assemble(b"3\n7\n", "Line") == b"3\n7\n"
    assert assemble(b"", "Line") == b"\n"


def test_r11_r12_output_names():
    assert output_name("a/b.csv") == "a/b.csv.out"
    assert output_name("x.csv.gz") == "x.csv.gz.out"
    with pytest.raises(ValidationError, match=r"dir/"):
        output_name("dir/")


def test_r15_r18_json_document_with_split_none_filter_and_join(tmp_path):
    """application/json, SplitType None: the whole document is one filtered record."""
    seen = []

    def invoke(body):
        seen.append(body)
        return b'{"score": 10}\n'

    out, stats = run_file(
        tmp_path,
        "doc.json",
        b'{"id": 7, "features": [1, 2, 3, 4]}\n',
        invoke,
        content_type="application/json",
        accept="application/json",
        input_filter="$.features",
        join_source="Input",
        output_filter="$['id','SageMakerOutput']",
    )
    assert seen == [b"[1,2,3,4]\n"]
    assert out == b'{"id":7,"SageMakerOutput":{"score":10}}'
    assert stats.records_in == 1 and stats.records_out is None


@pytest.mark.parametrize("compression", ["None", "Gzip"])
def test_bytes_done_are_told_after_every_request_up_to_the_file_size(
    tmp_path, model_m, compression
):
    """Progress advances per request (R7 framing), in bytes of the file as stored (R11)."""
    data = b"".join(b"%d,%d\n" % (i, i + 1) for i in range(200))
    stored = gzip.compress(data) if compression == "Gzip" else data
    src, dst = tmp_path / "d.csv", tmp_path / "d.csv.out"
    src.write_bytes(stored)
    settings = TransformSettings(
        **CSV, split_type="Line", batch_strategy="SingleRecord", compression_type=compression
    )
    told: list[int] = []
    stats = transform_file(
        src,
        dst,
        settings=settings,
        effective=settings.resolve(),
        invoke=model_m("text/csv"),
        on_bytes=told.append,
    )
    assert len(told) == stats.requests == 200
    assert told == sorted(told) and told[-1] == len(stored)


@pytest.mark.parametrize(
    ("accept", "join", "counted"),
    [
        ("text/csv", "None", True),
        ("application/jsonlines", "None", True),
        ("application/jsonl", "None", True),
        ("application/json", "None", False),
        ("application/x-npy", "None", False),
        ("application/json", "Input", True),
    ],
)
def test_r17_records_are_counted_only_where_the_answer_is_one_line_per_record(
    accept, join, counted
):
    settings = TransformSettings(
        content_type="application/json" if join == "Input" else "text/csv",
        accept=accept,
        split_type="Line",
        assemble_with="Line",
        join_source=join,
    )
    assert settings.counts_records is counted
    assert (settings.records_not_counted is None) is counted
    if not counted:
        assert accept in settings.records_not_counted


def test_r17_a_json_array_per_mini_batch_is_written_not_counted(tmp_path):
    """Accept application/json: one JSON array answers a whole mini-batch; with AssembleWith
    Line it is written with a newline after it and the file does not fail."""
    out, stats = run_file(
        tmp_path,
        "x.csv",
        b"1\n2\n3\n",
        lambda body: b"[0.1, 0.2, 0.3]",
        content_type="text/csv",
        accept="application/json",
        split_type="Line",
        assemble_with="Line",
    )
    assert out == b"[0.1, 0.2, 0.3]\n"
    assert (stats.records_in, stats.records_out) == (3, None)


@pytest.mark.parametrize(("start", "end"), [(0, 8), (8, 16), (8, None), (16, 16)])
def test_a_byte_range_of_a_file_is_transformed_alone_as_a_shard_would_be_r3(
    tmp_path, model_m, start, end
):
    data = b"1,2\n3,4\n5,6\n7,8\n"
    src = tmp_path / "d.csv"
    src.write_bytes(data)
    dst = tmp_path / "d.part.out"
    settings = TransformSettings(**CSV, split_type="Line", assemble_with="Line")
    stats = transform_file(
        src,
        dst,
        byte_range=(start, end),
        settings=settings,
        effective=settings.resolve(),
        invoke=model_m("text/csv"),
    )
    records = data[start:end].splitlines()
    expected = b"".join(b"%d\n" % sum(map(int, r.split(b","))) for r in records)
    assert dst.read_bytes() == expected
    assert (stats.records_in, stats.bytes_in) == (len(records), len(data[start:end]))


def test_a_byte_range_past_the_end_of_a_file_cut_short_fails_naming_it_r19(tmp_path, model_m):
    """The file lost its tail after its shards were planned: the shard fails, naming the
    file and where it ends, rather than passing for whole."""
    src = tmp_path / "d.csv"
    src.write_bytes(b"1,2\n3,4\n")
    settings = TransformSettings(**CSV, split_type="Line", assemble_with="Line")
    with pytest.raises(InputError, match=r"d\.part: the file ends at byte 8, before byte 16"):
        transform_file(
            src,
            tmp_path / "d.part.out",
            byte_range=(0, 16),
            settings=settings,
            effective=settings.resolve(),
            invoke=model_m("text/csv"),
            name="d.part",
        )
    assert not (tmp_path / "d.part.out").exists()
