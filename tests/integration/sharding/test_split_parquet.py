"""split() on Parquet: shards of whole row groups, each a standalone Parquet file, locally
by kernel copy and on S3 by UploadPartCopy with only each shard's edges read (R3: each input
object goes whole to one instance, so a large file needs shards to use every instance; R4:
the ManifestFile lists them)."""

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from batchinfer.errors import InputError, ValidationError
from batchinfer.multipart import MIN_PART_SIZE
from batchinfer.sharding import split
from batchinfer.transform.parquet_footer import FOOTER_GUESS


def table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": np.arange(rows),
            "income": rng.normal(size=rows),
            "city": pa.array(rng.choice(["Lyon", "Oslo", "Lima"], rows)).dictionary_encode(),
        }
    )


def write(data: pa.Table, path: Path, **options: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, path, **options)
    return path


def read_all(paths: list[str]) -> pa.Table:
    return pa.concat_tables(pq.read_table(p) for p in paths)


def test_r3_a_local_file_splits_into_standalone_files_of_whole_row_groups(tmp_path: Path):
    rows = table(10_000)
    source = write(rows, tmp_path / "in" / "customers.parquet", row_group_size=1_000)
    index = split(str(source), str(tmp_path / "shards"), shards=4)
    assert index.names == [f"customers.part-{n:05d}.parquet" for n in range(4)]
    groups = [pq.ParquetFile(uri).metadata.num_row_groups for uri in index.uris]
    assert sum(groups) == 10 and max(groups) - min(groups) <= 1
    assert read_all(index.uris).to_pylist() == rows.to_pylist()
    assert [shard.size for shard in index.shards] == [Path(u).stat().st_size for u in index.uris]
    starts = [shard.start for shard in index.shards]
    assert starts == sorted(starts) and index.shards[0].start == 4
    assert sorted(p.name for p in (tmp_path / "shards").iterdir()) == sorted(
        [*index.names, "customers.parquet.index.json", "customers.parquet.manifest"]
    )


def test_a_shard_size_packs_row_groups_into_files_of_at_most_that_size(tmp_path: Path):
    """A Parquet shard is one request: with a shard size (MaxPayloadInMB's bytes) each
    shard, footer included, is at most that size; a row group larger is a shard alone."""
    rows = table(20_000)
    source = write(rows, tmp_path / "in.parquet", row_group_size=700, compression="none")
    limit = 60_000
    index = split(str(source), str(tmp_path / "shards"), shard_size=limit)
    sizes = [Path(uri).stat().st_size for uri in index.uris]
    assert len(sizes) > 3 and max(sizes) <= limit
    assert sum(pq.ParquetFile(u).metadata.num_row_groups for u in index.uris) == 29
    assert read_all(index.uris).to_pylist() == rows.to_pylist()
    alone = split(str(source), str(tmp_path / "alone"), shard_size=1_000)
    assert [pq.ParquetFile(u).metadata.num_row_groups for u in alone.uris] == [1] * 29


def test_a_file_of_fewer_row_groups_than_shards_gives_one_shard_a_group(tmp_path: Path):
    source = write(table(300), tmp_path / "few.parquet", row_group_size=100)
    index = split(str(source), str(tmp_path / "shards"), shards=8)
    assert [pq.ParquetFile(u).metadata.num_rows for u in index.uris] == [100, 100, 100]


def test_a_file_of_one_row_group_is_its_own_shard_and_is_not_copied(tmp_path: Path):
    source = write(table(300), tmp_path / "one.parquet")
    index = split(str(source), str(tmp_path / "shards"), shards=4)
    assert index.uris == [str(source)]


def test_a_truncated_file_is_refused_naming_it_and_a_header_makes_no_sense(tmp_path: Path):
    source = write(table(3_000), tmp_path / "cut.parquet", row_group_size=1_000)
    whole = source.read_bytes()
    source.write_bytes(whole[: len(whole) - 20])
    with pytest.raises(InputError, match=r"cut.parquet: does not end with PAR1"):
        split(str(source), str(tmp_path / "shards"), shards=2)
    source.write_bytes(whole)
    with pytest.raises(ValidationError, match=r"cut\.parquet: a Parquet file has no header line"):
        split(str(source), str(tmp_path / "shards"), shards=2, header=True)
    assert not list((tmp_path / "shards").glob("*.parquet"))


@pytest.mark.parametrize(
    ("now", "message"),
    [
        (lambda path: write(table(2_000), path), r"holds 2,000 rows, not the 3,000 its footer"),
        (lambda path: path.write_bytes(b"id\n1\n"), r"does not end with PAR1"),
    ],
    ids=["rewritten", "no-longer-parquet"],
)
def test_a_file_that_changed_since_its_rows_were_read_fails_its_split(tmp_path, now, message):
    """Plan reads each Parquet object's rows from its footer and the split checks them: an
    object rewritten in between fails naming it, with nothing written, rather than give the
    run another count than its status item shows."""
    source = write(table(3_000), tmp_path / "in" / "day.parquet", row_group_size=1_000)
    now(source)
    with pytest.raises(InputError, match=r"day\.parquet: " + message):
        split(str(source), str(tmp_path / "shards"), shards=2, rows=3_000)
    assert not (tmp_path / "shards").exists() or not list((tmp_path / "shards").iterdir())


def test_r3_on_s3_shards_are_copied_by_s3_and_only_their_edges_are_read(s3, bucket, s3_log):
    """Two shards of about 12 MiB of float columns: each is PAR1 and its first 5 MiB
    uploaded, its middle copied by UploadPartCopy, its last 5 MiB and its footer uploaded
    (every part but the last at least 5 MiB, as S3 requires; moto checks it)."""
    rows = pa.table({f"x{i}": np.random.default_rng(i).random(400_000) for i in range(8)})
    data = io.BytesIO()
    pq.write_table(rows, data, row_group_size=100_000, compression="none")
    source = bucket.put("in/wide.parquet", data.getvalue())
    index = split(source, f"s3://{bucket.name}/shards/", shards=2, s3_client=s3)
    assert s3_log.bytes_read <= 2 * 2 * MIN_PART_SIZE + FOOTER_GUESS + 8
    assert s3_log.count("UploadPartCopy") == 2
    assert len(index.shards) == 2
    shards = [pq.read_table(io.BytesIO(bucket.get(uri))) for uri in index.uris]
    assert pa.concat_tables(shards).equals(rows)
    assert bucket.open_uploads() == []


def test_small_s3_shards_are_read_and_uploaded_whole(s3, bucket, s3_log):
    data = io.BytesIO()
    pq.write_table(table(6_000), data, row_group_size=1_000)
    source = bucket.put("in/small.parquet", data.getvalue())
    index = split(source, f"s3://{bucket.name}/shards", shards=3, s3_client=s3)
    shards = [pq.read_table(io.BytesIO(bucket.get(uri))) for uri in index.uris]
    assert pa.concat_tables(shards).to_pylist() == table(6_000).to_pylist()
    assert s3_log.count("UploadPartCopy") == 0


def test_a_split_run_again_after_it_ran_writes_the_same_shards_once(s3, bucket, s3_log):
    """A retried SplitObject (its answer lost after it finished) splits the same object
    into the same prefix: the same shard bytes and index, no second set of objects, and no
    multipart upload left open."""
    data = io.BytesIO()
    pq.write_table(table(6_000), data, row_group_size=1_000)
    source = bucket.put("in/again.parquet", data.getvalue())
    first = split(source, f"s3://{bucket.name}/shards/", shards=3, s3_client=s3)
    written = {uri: bucket.get(uri) for uri in first.uris}
    keys = bucket.keys("shards/")
    again = split(source, f"s3://{bucket.name}/shards/", shards=3, s3_client=s3)
    assert again.shards == first.shards
    assert {uri: bucket.get(uri) for uri in again.uris} == written
    assert bucket.keys("shards/") == keys
    assert bucket.open_uploads() == []
