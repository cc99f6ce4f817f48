"""Framing of one file into requests: SplitType (R6), BatchStrategy (R7), payload (R8)."""

import io
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchinfer.errors import ValidationError
from batchinfer.transform.record_errors import RecordError
from batchinfer.transform.records import Batch, count_records, empty_line, frame
from batchinfer.units import MIB


class ShortReads(io.RawIOBase):
    """A stream that returns at most ``step`` bytes per read, like a pipe or gzip stream."""

    def __init__(self, data: bytes, step: int):
        self._data = io.BytesIO(data)
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        chunk = self._data.read(min(len(target), self._step))
        target[: len(chunk)] = chunk
        return len(chunk)


def batches(data: bytes, *, split="Line", strategy="MultiRecord", limit=MIB, step=None, **kw):
    return list(
        frame(
            ShortReads(data, step) if step else io.BytesIO(data),
            name="in/f.csv",
            split_type=split,
            batch_strategy=strategy,
            max_payload_bytes=limit,
            **kw,
        )
    )


@pytest.mark.parametrize("strategy", ["SingleRecord", "MultiRecord"])
def test_r6_line_records_keep_crlf_empty_lines_and_a_final_line_without_newline(strategy):
    data = b"a,1\r\n\nb,2\nc,3"
    found = batches(data, strategy=strategy, limit=None)
    if strategy == "SingleRecord":
        assert [b.body for b in found] == [b"a,1\r\n", b"\n", b"b,2\n", b"c,3"]
        assert [(b.first_record, b.record_count) for b in found] == [(1, 1), (2, 1), (3, 1), (4, 1)]
    else:
        assert [(b.body, b.first_record, b.record_count) for b in found] == [(data, 1, 4)]


def test_r6_split_none_sends_the_whole_object_once():
    assert [(b.body, b.record_count) for b in batches(b"1,2\n3,4\n", split="None")] == [
        (b"1,2\n3,4\n", 1)
    ]


def test_r6_empty_file_has_no_line_records():
    assert batches(b"") == []
    assert count_records(b"") == 0 and count_records(b"\n") == 1 and count_records(b"a") == 1


@pytest.mark.parametrize(
    ("strategy", "limit", "expected"),
    [
        ("SingleRecord", MIB, [(b"a,1\r\n", 1, 1, 9), (b"b,2\n", 2, 1, 6), (b"c,3", 3, 1, 3)]),
        ("MultiRecord", 9, [(b"a,1\r\nb,2\n", 1, 2, 15), (b"c,3", 3, 1, 3)]),
        ("MultiRecord", None, [(b"a,1\r\nb,2\nc,3", 1, 3, 18)]),
    ],
)
def test_r6_skip_blank_lines_drops_empty_lines_before_batching_and_numbering(
    strategy, limit, expected
):
    """An empty line (``\n`` or ``\r\n``) is no record; its bytes still count as read, so
    the batches cover the input and a run resumed after one starts where it ends."""
    data = b"\n\na,1\r\n\r\nb,2\n\n\nc,3"
    found = batches(data, strategy=strategy, limit=limit, skip_blank_lines=True)
    assert [(b.body, b.first_record, b.record_count, b.input_bytes) for b in found] == expected
    assert sum(b.input_bytes for b in found) == len(data)
    assert batches(b"\n\r\n\n", skip_blank_lines=True) == []


def test_r6_skip_blank_lines_keeps_whitespace_lines_and_joined_records():
    found = batches(b" \n\n1,2\n", skip_blank_lines=True, keep_records=True, limit=None)
    assert [(b.body, b.records, b.record_count) for b in found] == [
        (b" \n1,2\n", (b" \n", b"1,2\n"), 2)
    ]


def test_r6_skip_blank_lines_needs_line_records():
    with pytest.raises(ValidationError, match=r"--skip-blank-lines: needs --split-type Line"):
        batches(b"1\n", split="None", skip_blank_lines=True)


def test_r6_the_first_empty_line_of_a_batch_is_found_by_its_number_in_the_file():
    assert empty_line(Batch(b"1,2\n3,4\n\r\n\n", 11, 4)) == 13
    assert empty_line(Batch(b"x", 1, 1, records=(b"1\n", b"\n"))) == 2
    assert empty_line(Batch(b"1,2\n3,4", 1, 2)) is None


def test_r7_multi_record_packs_greedily_within_the_limit():
    data = b"aaa\nbb\ncccc\nd\n"
    found = batches(data, limit=8)
    assert [b.body for b in found] == [b"aaa\nbb\n", b"cccc\nd\n"]
    assert [(b.first_record, b.record_count, b.last_record) for b in found] == [
        (1, 2, 2),
        (3, 2, 4),
    ]


def test_r7_sizes_count_request_body_bytes_after_the_input_filter():
    """Filtered records are smaller, so more of them fit in one request (R7)."""
    data = b"id1,1\nid2,2\nid3,3\n"
    found = batches(data, limit=6, record_filter=lambda record, number: record[4:])
    assert [b.body for b in found] == [b"1\n2\n3\n"]
    kept = batches(data, limit=6, record_filter=lambda r, n: r[4:], keep_records=True)
    assert kept[0].records == (b"id1,1\n", b"id2,2\n", b"id3,3\n")


@pytest.mark.parametrize("strategy", ["SingleRecord", "MultiRecord"])
@pytest.mark.parametrize("filtered", [False, True])
def test_r8_oversize_record_names_file_and_record_number(strategy, filtered):
    data = b"1,2\n3,4\n" + b"9" * 20 + b"\n5,6\n"
    record_filter = (lambda record, number: record) if filtered else None
    with pytest.raises(RecordError, match=r"in/f.csv: record 3: is larger than") as info:
        batches(data, strategy=strategy, limit=16, record_filter=record_filter)
    assert info.value.file == "in/f.csv" and info.value.first_record == 3
    assert "shorten the record" in str(info.value) and "split_type" not in str(info.value)


@pytest.mark.parametrize("filtered", [False, True])
def test_r8_oversize_split_none_object_fails_suggesting_split_type_line(filtered):
    record_filter = (lambda record, number: record) if filtered else None
    with pytest.raises(RecordError, match=r"record 1") as info:
        batches(b"x" * 17, split="None", limit=16, record_filter=record_filter)
    assert str(info.value).endswith(
        "with split_type None the whole file is one record: set split_type Line "
        "(--split-type Line) to send it line by line, or raise max_payload_mb (up to 100, or 0 "
        "for no limit)"
    )
    assert batches(b"x" * 16, split="None", limit=16)[0].body == b"x" * 16


def test_r8_a_record_exactly_at_the_limit_fits():
    assert [b.body for b in batches(b"abc\nd\n", limit=4)] == [b"abc\n", b"d\n"]


def test_r8_zero_payload_means_no_limit():
    data = b"1\n" * 1000
    assert [b.record_count for b in batches(data, limit=None)] == [1000]


def test_r6_record_io_and_tfrecord_are_not_emulated():
    with pytest.raises(ValidationError, match=r"RecordIO"):
        batches(b"", split="RecordIO")


records = st.lists(
    st.binary(max_size=12)
    .map(lambda b: b.replace(b"\n", b""))
    .flatmap(lambda body: st.sampled_from([body + b"\n", body + b"\r\n"])),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(
    records=records,
    final=st.binary(max_size=5).map(lambda b: b.replace(b"\n", b"")),
    limit=st.integers(min_value=1, max_value=64),
    read_size=st.integers(min_value=1, max_value=40),
    step=st.integers(min_value=1, max_value=9),
    strategy=st.sampled_from(["SingleRecord", "MultiRecord"]),
    filtered=st.booleans(),
)
def test_r7_r8_framing_properties(records, final, limit, read_size, step, strategy, filtered):
    """Batches reproduce the input in order, hold whole records, stay within the limit, and
    an oversize record is the only reason to fail (R6-R8)."""
    data = b"".join(records) + final
    all_records = [*records, final] if final else records
    record_filter = (lambda record, number: record) if filtered else None
    try:
        found = batches(
            data,
            strategy=strategy,
            limit=limit,
            read_size=read_size,
            step=step,
            record_filter=record_filter,
        )
    except RecordError as exc:
        assert len(all_records[exc.first_record - 1]) > limit
        assert all(len(r) <= limit for r in all_records[: exc.first_record - 1])
        return
    assert all(len(r) <= limit for r in all_records)
    assert b"".join(b.body for b in found) == data
    assert all(b.input_bytes == len(b.body) for b in found)  # the filter here is the identity
    assert all(len(b.body) <= limit for b in found)
    assert sum(b.record_count for b in found) == len(all_records)
    expected_first = 1
    for batch in found:
        assert batch.first_record == expected_first
        assert batch.body == b"".join(all_records[expected_first - 1 : batch.last_record])
        if strategy == "SingleRecord":
            assert batch.record_count == 1
        expected_first += batch.record_count
    if strategy == "MultiRecord":
        # Greedy: the next record would not have fitted in the previous batch.
        for before, after in itertools.pairwise(found):
            assert len(before.body) + len(all_records[after.first_record - 1]) > limit


@settings(max_examples=100, deadline=None)
@given(
    records=records,
    limit=st.integers(min_value=16, max_value=64),  # every record fits
    strategy=st.sampled_from(["SingleRecord", "MultiRecord"]),
    filtered=st.booleans(),
    joined=st.booleans(),
    cut=st.integers(min_value=0, max_value=40),
)
def test_framing_resumes_at_a_batch_boundary(records, limit, strategy, filtered, joined, cut):
    """Framing the rest of a file from the end of any batch (its ``input_bytes``), numbered
    from the next record, gives the same batches as framing the whole file."""
    data = b"".join(records)
    kw = dict(
        strategy=strategy,
        limit=limit,
        record_filter=(lambda record, number: record[:5]) if filtered else None,
        keep_records=joined,
    )
    whole = batches(data, **kw)
    done = whole[: min(cut, len(whole))]
    offset = sum(b.input_bytes for b in done)
    assert sum(b.input_bytes for b in whole) == len(data)
    rest = batches(data[offset:], first_record=sum(b.record_count for b in done) + 1, **kw)
    assert done + rest == whole


def test_a_resumed_frame_names_records_by_their_number_in_the_file():
    with pytest.raises(RecordError, match=r"in/f.csv: record 7: is larger"):
        batches(b"1\n" + b"x" * 20 + b"\n", limit=10, first_record=6)
