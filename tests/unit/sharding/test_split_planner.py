"""plan_shards: line-aligned cut points from small reads (spec R3, R6)."""

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchinfer.errors import InputError, ValidationError
from batchinfer.sharding.planner import FIRST_WINDOW, ShardPlan, plan_shards


class Reader:
    """``read_range`` over bytes, counting the bytes it hands out."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.bytes_read = 0

    def __call__(self, start: int, end: int) -> bytes:
        assert 0 <= start < end <= len(self.data)
        self.bytes_read += end - start
        return self.data[start:end]


def plan(data: bytes, **kwargs) -> ShardPlan:
    return plan_shards(len(data), Reader(data), source="mem.csv", **kwargs)


def assert_line_aligned(data: bytes, result: ShardPlan) -> None:
    """Shards are contiguous, non-empty, and each starts and ends on a record boundary."""
    data_start = len(result.header or b"")
    assert result.ranges[0][0] == data_start
    assert result.ranges[-1][1] == len(data)
    for start, end in result.ranges:
        assert start < end
        assert start == data_start or data[start - 1 : start] == b"\n"
        assert end == len(data) or data[end - 1 : end] == b"\n"
    for (_, end), (start, _) in pairwise(result.ranges):
        assert start == end


records = st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=40)


@given(
    records=records,
    ending=st.sampled_from([b"\n", b"\r\n"]),
    trailing=st.booleans(),
    header=st.booleans(),
    shards=st.one_of(st.none(), st.integers(1, 20)),
    shard_size=st.integers(1, 300),
)
def test_r6_concatenated_shards_are_the_input_minus_header_and_start_on_records(
    records, ending, trailing, header, shards, shard_size
):
    data = ending.join(records) + (ending if trailing and records else b"")
    settings = {"shards": shards} if shards is not None else {"shard_size": shard_size}
    first_line_end = data.find(b"\n") + 1
    if not data or (header and (first_line_end == 0 or first_line_end == len(data))):
        with pytest.raises(InputError, match=r"mem\.csv"):
            plan(data, header=header, **settings)
        return
    result = plan(data, header=header, **settings)
    header_bytes = data[:first_line_end] if header else None
    assert result.header == header_bytes
    assert b"".join(data[s:e] for s, e in result.ranges) == data[len(header_bytes or b"") :]
    assert_line_aligned(data, result)
    assert result.whole_object == (result.ranges == [(0, len(data))])
    if shards is not None:
        assert len(result.ranges) <= shards


def test_r6_crlf_records_stay_whole():
    data = b"a,1\r\nb,2\r\nc,3\r\nd,4\r\n"
    result = plan(data, shards=4)
    assert [data[s:e] for s, e in result.ranges] == [b"a,1\r\n", b"b,2\r\n", b"c,3\r\n", b"d,4\r\n"]


def test_r6_last_line_without_newline_is_in_the_last_shard():
    data = b"1,2\n3,4\n5,6"
    result = plan(data, shards=2)
    assert [data[s:e] for s, e in result.ranges] == [b"1,2\n3,4\n", b"5,6"]


def test_r6_record_longer_than_target_grows_its_shard_and_is_never_cut():
    long_record = b"L" * (3 * FIRST_WINDOW + 5) + b"\n"
    data = b"a\nb\n" + long_record + b"c\nd\n"
    result = plan(data, shard_size=3)
    shards = [data[s:e] for s, e in result.ranges]
    assert long_record in [shard[-len(long_record) :] for shard in shards]
    assert b"".join(shards) == data
    assert_line_aligned(data, result)


def test_record_longer_than_the_largest_window_is_found():
    data = b"x" * (3 << 20) + b"\nlast\n"
    result = plan(data, shards=2)
    assert result.ranges == [(0, (3 << 20) + 1), ((3 << 20) + 1, len(data))]


def test_r3_input_smaller_than_one_shard_is_the_whole_object():
    data = b"1,2\n3,4\n"
    result = plan(data, shard_size=1 << 20)
    assert result.ranges == [(0, len(data))]
    assert result.whole_object


def test_single_record_with_many_shards_is_the_whole_object():
    assert plan(b"only one record\n", shards=16).whole_object


def test_more_shards_than_records_gives_one_shard_per_record():
    data = b"a\nb\nc\n"
    assert plan(data, shards=10).ranges == [(0, 2), (2, 4), (4, 6)]


def test_header_is_dropped_from_shards_and_kept_in_the_plan():
    data = b"id,x\r\n1,2\r\n3,4\r\n"
    result = plan(data, shards=2, header=True)
    assert result.header == b"id,x\r\n"
    assert [data[s:e] for s, e in result.ranges] == [b"1,2\r\n", b"3,4\r\n"]
    assert not result.whole_object


def test_empty_input_is_an_error_naming_the_source():
    with pytest.raises(InputError, match=r"mem\.csv is empty"):
        plan(b"", shards=2)


@pytest.mark.parametrize("data", [b"id,x\n", b"id,x"])
def test_header_without_records_is_an_error(data):
    with pytest.raises(InputError, match=r"mem\.csv has a header line but no records"):
        plan(data, shards=2, header=True)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "exactly one of shards"),
        ({"shards": 2, "shard_size": 10}, "exactly one of shards"),
        ({"shards": 0}, "shards: 0 must be at least 1"),
        ({"shard_size": 0}, "shard_size: 0"),
        ({"shards": 100_001}, "limit is 100000"),
    ],
)
def test_bad_settings_are_validation_errors(settings, message):
    with pytest.raises(ValidationError, match=message):
        plan(b"a\nb\n", **settings)


def test_planning_reads_one_small_window_per_cut():
    line = b"0123456789," * 9 + b"\n"
    data = line * 20_000  # 2 MB
    reader = Reader(data)
    result = plan_shards(len(data), reader, shards=8)
    assert len(result.ranges) == 8
    assert reader.bytes_read <= 7 * FIRST_WINDOW
