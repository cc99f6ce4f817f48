"""One pass over an input's records: count, largest, and a uniform sample (R6 framing)."""

from collections import Counter

import pytest

from batchinfer.planning.scan import Reservoir, scan_lines


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("chunk", [1, 3, 7, 1000])
def test_records_are_counted_as_the_job_frames_them_whatever_the_chunking(chunk):
    data = b"a,1\n\nbbbbbbbbbb,2\r\nc,3"  # an empty line is a record, so is an unterminated one
    scan = scan_lines(_chunks(data, chunk), Reservoir(0))
    assert scan.records == 4
    assert scan.bytes == len(data)
    assert (scan.largest.number, scan.largest.size) == (3, len(b"bbbbbbbbbb,2\r\n"))


def test_the_first_of_equal_largest_records_is_named_and_an_unterminated_one_counts_its_bytes():
    scan = scan_lines([b"xx\nyyy\n", b"zzz"], Reservoir(0))
    assert (scan.largest.number, scan.largest.size) == (2, 4)
    scan = scan_lines([b"xx\n", b"yyyy"], Reservoir(0))
    assert (scan.largest.number, scan.largest.size) == (2, 4)
    scan = scan_lines([b"xx\nyy\n"], Reservoir(0))
    assert (scan.largest.number, scan.largest.size) == (1, 3)


def test_the_sample_holds_every_record_when_there_are_fewer_than_asked():
    reservoir = Reservoir(10)
    scan_lines([b"1\n2\n", b"3"], reservoir)
    scan_lines([b"4\n"], reservoir)
    assert reservoir.sample() == [b"1\n", b"2\n", b"3\n", b"4\n"]


def test_the_sample_is_spread_across_all_inputs_in_input_order():
    reservoir = Reservoir(500, seed=3)
    files = [b"".join(b"%d,%d\n" % (f, i) for i in range(20_000)) for f in range(5)]
    for data in files:
        scan_lines(_chunks(data, 65536), reservoir)
    sample = reservoir.sample()
    assert len(sample) == 500 and len(set(sample)) == 500
    keys = [tuple(map(int, record.split(b","))) for record in sample]
    assert keys == sorted(keys)
    per_file = Counter(f for f, _ in keys)
    assert set(per_file) == set(range(5)) and min(per_file.values()) >= 60  # ~100 each
    halves = Counter(i >= 10_000 for _, i in keys)
    assert min(halves.values()) >= 180  # ~250 in each half of every file


def test_every_record_is_equally_likely_to_be_sampled():
    hits: Counter[bytes] = Counter()
    data = b"".join(b"%d\n" % i for i in range(40))
    for seed in range(2000):
        reservoir = Reservoir(4, seed=seed)
        scan_lines(_chunks(data, 9), reservoir)
        hits.update(reservoir.sample())
    # each record is expected 2000 * 4 / 40 = 200 times
    assert len(hits) == 40 and min(hits.values()) > 140 and max(hits.values()) < 260
