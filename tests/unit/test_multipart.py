"""Multipart part plans: ranges S3 copies, and the parts that concatenate sources in order
within S3's limits, downloading only what cannot be copied."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchinfer.errors import InputError
from batchinfer.multipart import (
    MAX_PART_SIZE,
    MIN_PART_SIZE,
    CopyPart,
    Part,
    PartLimits,
    Piece,
    UploadPart,
    copy_part_ranges,
    plan_concatenation,
)

MiB = 1024**2
GiB = 1024**3


def pieces(plan: list[Part]) -> list[Piece]:
    return [piece for part in plan for piece in part.pieces]


def downloaded(plan: list[Part]) -> int:
    return sum(part.size for part in plan if isinstance(part, UploadPart))


def assert_valid(sizes: list[int], plan: list[Part], limits: PartLimits) -> None:
    """Each source's bytes appear once, in order; every part keeps the limits."""
    laid_out = [(p.source, p.start, p.end) for p in pieces(plan)]
    assert all(start < end for _, start, end in laid_out), "no empty piece"
    for source, group in itertools.groupby(laid_out, key=lambda p: p[0]):
        ranges = [(start, end) for _, start, end in group]
        assert ranges[0][0] == 0 and ranges[-1][1] == sizes[source]
        assert all(end == start for (_, end), (start, _) in itertools.pairwise(ranges))
    assert [source for source, _ in itertools.groupby(s for s, _, _ in laid_out)] == [
        i for i, size in enumerate(sizes) if size
    ], "every non-empty source, in order, each once"
    assert 1 <= len(plan) <= limits.max_parts
    assert all(limits.min_part <= part.size <= limits.max_part for part in plan[:-1])
    assert plan[-1].size <= limits.max_part
    assert all(part.size <= limits.max_upload for part in plan if isinstance(part, UploadPart))


def small_runs(sizes: list[int], limits: PartLimits) -> int:
    """Runs of non-empty sources below the minimum part, empty sources left out."""
    kinds = [size < limits.min_part for size in sizes if size]
    return sum(1 for small, _ in itertools.groupby(kinds) if small)


def test_copy_part_ranges_split_evenly_within_the_limit():
    parts = copy_part_ranges(7, 7 + 12 * GiB, MAX_PART_SIZE)
    assert len(parts) == 3
    assert parts[0][0] == 7 and parts[-1][1] == 7 + 12 * GiB
    assert all(b == c for (_, b), (c, _) in itertools.pairwise(parts))
    assert all(MAX_PART_SIZE / 2 < end - start <= MAX_PART_SIZE for start, end in parts)
    assert copy_part_ranges(0, 10, MAX_PART_SIZE) == [(0, 10)]
    assert copy_part_ranges(10, 10, MAX_PART_SIZE) == []


@pytest.mark.parametrize("sizes", [[], [0], [0, 0]])
def test_an_empty_object_is_one_empty_upload_part(sizes):
    assert plan_concatenation(sizes) == [UploadPart(())]


@pytest.mark.parametrize("size", [1, 4 * MiB, 5 * MiB, 5 * GiB])
def test_one_source_up_to_the_part_limit_is_copied_whole(size):
    assert plan_concatenation([size]) == [CopyPart(Piece(0, 0, size))]


def test_one_source_over_the_part_limit_is_copied_in_ranges():
    assert plan_concatenation([5 * GiB + 1]) == [
        CopyPart(Piece(0, 0, 5 * GiB // 2)),
        CopyPart(Piece(0, 5 * GiB // 2, 5 * GiB + 1)),
    ]
    plan = plan_concatenation([50 * GiB])
    assert [part.size for part in plan] == [5 * GiB] * 10
    assert downloaded(plan) == 0


def test_small_sources_between_large_ones_borrow_the_head_of_the_next():
    """Each small run reaches 5 MiB with the head of the large source after it; the rest of
    that source is copied; the 1-byte tail is the last part and is copied too."""
    sizes = [1, 5 * GiB + 1, 4 * MiB, 0, 50 * GiB, 1]
    plan = plan_concatenation(sizes)
    assert plan[:3] == [
        UploadPart((Piece(0, 0, 1), Piece(1, 0, 5 * MiB - 1))),
        CopyPart(Piece(1, 5 * MiB - 1, 5 * GiB + 1)),
        UploadPart((Piece(2, 0, 4 * MiB), Piece(4, 0, MiB))),
    ]
    assert plan[3:13] == [
        CopyPart(Piece(4, start, end)) for start, end in copy_part_ranges(MiB, 50 * GiB, 5 * GiB)
    ]
    assert plan[13:] == [CopyPart(Piece(5, 0, 1))]
    assert downloaded(plan) == 10 * MiB
    assert_valid(sizes, plan, PartLimits())


def test_a_neighbour_too_small_to_leave_a_copyable_rest_is_taken_whole():
    plan = plan_concatenation([5 * GiB, 1, 6 * MiB, 5 * GiB])
    assert plan == [
        CopyPart(Piece(0, 0, 5 * GiB)),
        UploadPart((Piece(1, 0, 1), Piece(2, 0, 6 * MiB))),
        CopyPart(Piece(3, 0, 5 * GiB)),
    ]


def test_small_sources_fill_upload_parts_across_their_boundaries():
    plan = plan_concatenation([3 * MiB] * 10)
    assert [part.size for part in plan] == [16 * MiB, 14 * MiB]
    assert plan[0].pieces[-1] == Piece(5, 0, MiB)
    assert plan[1].pieces[0] == Piece(5, MiB, 3 * MiB)
    assert downloaded(plan) == 30 * MiB


def test_a_small_run_already_at_the_minimum_stands_alone():
    plan = plan_concatenation([4 * MiB, 4 * MiB, 5 * GiB])
    assert plan == [
        UploadPart((Piece(0, 0, 4 * MiB), Piece(1, 0, 4 * MiB))),
        CopyPart(Piece(2, 0, 5 * GiB)),
    ]


def test_more_parts_than_one_upload_may_have_is_refused():
    with pytest.raises(InputError, match=r"10001 sources of \d+ bytes need 10001 parts"):
        plan_concatenation([MIN_PART_SIZE] * 10_001)
    assert len(plan_concatenation([MIN_PART_SIZE] * 10_000)) == 10_000


def test_an_object_over_5_tib_is_refused():
    assert len(plan_concatenation([5 * 1024**4])) == 1024
    with pytest.raises(InputError, match="more than the 5497558138880 bytes an object may hold"):
        plan_concatenation([5 * 1024**4, 1])


def test_limits_must_leave_room_for_two_minimum_parts_in_an_upload():
    with pytest.raises(ValueError, match="2 \\* min_part <= max_upload"):
        PartLimits(min_part=5, max_upload=9, max_part=20)
    with pytest.raises(ValueError, match="max_upload <= max_part"):
        PartLimits(max_part=8 * MiB)


@st.composite
def small_limits(draw: st.DrawFn) -> PartLimits:
    min_part = draw(st.integers(1, 8))
    max_upload = draw(st.integers(2 * min_part, 4 * min_part))
    max_part = draw(st.integers(max_upload, 3 * max_upload))
    return PartLimits(min_part, max_part, max_upload, max_parts=10**6, max_object=10**9)


@given(small_limits(), st.lists(st.integers(0, 60), max_size=12))
def test_every_plan_lays_out_each_byte_once_in_order_within_the_limits(limits, sizes):
    plan = plan_concatenation(sizes, limits)
    assert_valid(sizes, plan, limits)
    own = sum(size for size in sizes if size < limits.min_part)
    assert downloaded(plan) <= own + 2 * limits.min_part * small_runs(sizes, limits)


REAL_SIZES = st.sampled_from([0, 1, 4 * MiB, 5 * MiB - 1, 5 * MiB, 5 * GiB, 5 * GiB + 1, 50 * GiB])


@given(st.lists(REAL_SIZES | st.integers(0, 60 * GiB), max_size=12))
def test_plans_at_s3_sizes_keep_s3_limits(sizes):
    limits = PartLimits()
    plan = plan_concatenation(sizes)
    assert_valid(sizes, plan, limits)
    own = sum(size for size in sizes if size < limits.min_part)
    assert downloaded(plan) <= own + 2 * MIN_PART_SIZE * small_runs(sizes, limits)
