"""The scale harness's cases (bench/pipeline/scale.py runs them at full size): each step's
real code does its work against the fakes, with the calls AWS would answer, and the steps
that must hold a run of any size in bounded memory do so: ten times the run, about the same
peak of Python allocations (docs/scaling.md)."""

import pytest

from batchinfer.pipeline.storage.s3io import SPOOL_MEMORY
from batchinfer.pipeline.storage.status_table import SHARD_PARTITIONS
from tests.support.scale.cases import finalize_run, plan_objects, verify_round

# What ten times the run may add to a bounded step's peak: buffers that fill to a fixed size
# (the spools' 8 MiB in memory, boto3's transfer parts) reach it at one size and not the other.
GROWTH_MIB = 4.0


@pytest.fixture(autouse=True)
def credentials(monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")


def test_verify_streams_a_round_in_bounded_memory_writing_25_items_a_request():
    small, large = verify_round(2_000), verify_round(20_000)
    assert large.result.missing == 200 and large.result.number == 2  # 1 in 100 missing
    assert large.figures.calls["dynamodb:BatchWriteItem"] == 20_000 // 25
    assert large.figures.calls["s3:GetObject"] == 2  # the manifest and one result file
    assert large.figures.peak_mib < small.figures.peak_mib + GROWTH_MIB


@pytest.mark.slow
def test_plan_lists_objects_a_page_at_a_time_in_bounded_memory():
    """Below about 40,000 objects the item file's spool and the part its upload reads are
    still filling (to 8 MiB each: 4.8 MiB at 10,000 objects, 16.6 MiB at 40,000); past
    them, twice the objects add nothing a page or an object holds."""
    small, large = plan_objects(40_000), plan_objects(80_000)
    assert large.result.objects == 80_000
    assert large.figures.calls["s3:ListObjectsV2"] == 80
    assert large.figures.peak_mib < small.figures.peak_mib + GROWTH_MIB


@pytest.mark.slow
def test_finalize_holds_16_bytes_a_shard_past_its_fixed_buffers():
    """Past 50,000 shards a Query page is full, so twice the shards may add only the
    manifest's spool and the part its upload reads filling up (to 8 MiB each at most) and
    16 bytes a shard for the counts: nothing a shard or an input object holds."""
    small, large = finalize_run(50_000), finalize_run(100_000)
    assert (large.result.shards, large.result.records_in) == (100_000, 100_000 * 1000)
    # 1 MB pages under each of the partition keys, the last of each part full
    assert large.figures.calls["dynamodb:Query"] <= 100_000 // 5_000 + SHARD_PARTITIONS
    allowance = (2 * SPOOL_MEMORY + 16 * 50_000) / 2**20
    assert large.figures.peak_mib < small.figures.peak_mib + allowance
