"""Plan on Parquet objects: each object's footer is read with ranged reads of the version
listed (no download), so the split tasks, the RUN item and the estimate hold its rows and
the exact row-group shards; an object that is not a whole Parquet file is refused before
anything is written."""

import gzip

import boto3
import pyarrow as pa
import pytest

from batchinfer.errors import InputError
from batchinfer.pipeline.contract.state import SplitTask
from batchinfer.pipeline.steps.split_object import split_object
from tests.support.parquet_tables import parquet_bytes

from .conftest import BUCKET
from .test_plan import plan

PARQUET = {
    "content_type": "application/x-parquet",
    "accept": "application/x-parquet",
    "split_type": "None",
    "assemble_with": "None",
}


def _table(rows: int) -> pa.Table:
    numbers = range(rows)
    return pa.table({"x": [float(i) for i in numbers], "city": [f"c{i % 7}" for i in numbers]})


@pytest.fixture
def reads(account):
    """The input GetObject calls Plan makes: (key, Range, IfMatch) each."""
    made: list[tuple[str, str | None, str | None]] = []

    def record(params, **_):
        if params["Key"].startswith("input/"):
            made.append((params["Key"], params.get("Range"), params.get("IfMatch")))

    account.s3.meta.events.register("provide-client-params.s3.GetObject", record)
    return made


def test_plan_reads_each_parquet_objects_rows_by_a_ranged_read_of_the_version_listed(
    account, reads
):
    """One ranged read of each object's end, pinned to the ETag listed: the split tasks and
    the RUN item carry the rows before any split."""
    account.put("input/lake/a.parquet", parquet_bytes(_table(300), row_group_size=100))
    account.put("input/lake/b.parquet", parquet_bytes(_table(40)))
    request = {"input": f"s3://{BUCKET}/input/lake/", "shards": 2, **PARQUET}
    result = plan(account, request)
    tasks = account.json_lines(f"s3://{BUCKET}/{result['inputs_key']}")
    assert [(t["input"].rsplit("/", 1)[1], t["rows"], t["shards"]) for t in tasks] == [
        ("a.parquet", 300, 2),
        ("b.parquet", 40, 2),
    ]
    assert account.table.get_run("exec-1")["rows"] == 340
    etags = {
        obj["Key"]: obj["ETag"]
        for obj in account.s3.list_objects_v2(Bucket=BUCKET, Prefix="input/")["Contents"]
    }
    assert sorted(key for key, _, _ in reads) == ["input/lake/a.parquet", "input/lake/b.parquet"]
    assert all(ranged and ranged.startswith("bytes=") for _, ranged, _ in reads)
    assert all(pinned == etags[key] for key, _, pinned in reads)


def test_a_rows_per_second_estimates_parquet_by_its_rows(account):
    """Two objects of the same rows, one twice the other's bytes: by rows, each shard takes
    as long as any other."""
    account.put("input/lake/a.parquet", parquet_bytes(_table(200), compression="none"))
    account.put("input/lake/b.parquet", parquet_bytes(_table(200), compression="gzip"))
    request = {
        "input": f"s3://{BUCKET}/input/lake/",
        "shards": 2,
        "instance_type": "ml.m5.xlarge",
        "instance_count": 4,
        "estimate": {"bytes_per_second": 1, "rows_per_second": 25, "busy_cpus": 1},
        **PARQUET,
    }
    plan(account, request)
    estimate = account.table.get_run("exec-1")["estimate"]
    # 25 rows/s per busy CPU, 4 busy on an m5.xlarge: 100 rows/s; four shards of 100 rows
    # on four instances: 1 s each
    assert estimate["basis"] == "records"
    assert estimate["job_seconds"] == 1


def test_a_split_checks_the_rows_plan_read(account):
    """The split task carries the rows Plan read; SplitObject splits an object that still
    holds them, and fails one rewritten since, naming it."""
    account.put("input/lake/a.parquet", parquet_bytes(_table(400), row_group_size=100))
    result = plan(account, {"input": f"s3://{BUCKET}/input/lake/", "shards": 2, **PARQUET})
    (task,) = account.json_lines(f"s3://{BUCKET}/{result['inputs_key']}")
    assert split_object(SplitTask.from_state(task), s3=account.s3).shards == 2
    account.put("input/lake/a.parquet", parquet_bytes(_table(300), row_group_size=100))
    with pytest.raises(InputError, match=r"a\.parquet: holds 300 rows, not the 400"):
        split_object(SplitTask.from_state(task), s3=account.s3)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: data[: len(data) // 2], r"input/lake/b\.parquet: does not end with PAR1"),
        (lambda _data: b"x,y\n" * 9, r"input/lake/b\.parquet: does not end with PAR1"),
    ],
    ids=["truncated", "csv"],
)
def test_an_object_that_is_not_whole_parquet_is_refused_by_plan_and_nothing_is_written(
    account, damage, message
):
    whole = parquet_bytes(_table(100))
    account.put("input/lake/a.parquet", whole)
    account.put("input/lake/b.parquet", damage(whole))
    with pytest.raises(InputError, match=message):
        plan(account, {"input": f"s3://{BUCKET}/input/lake/", **PARQUET})
    assert account.table.get_run("exec-1") is None
    assert account.keys("runs/") == account.keys("shards/") == []


def test_gzip_parquet_objects_are_planned_without_their_rows(account):
    """A gzip object's end is not its footer's: Plan leaves its rows unread, and the run's
    total, which would be short of them, unset."""
    account.put("input/lake/a.parquet", parquet_bytes(_table(100)))
    account.put("input/lake/b.parquet.gz", gzip.compress(parquet_bytes(_table(100))))
    result = plan(account, {"input": f"s3://{BUCKET}/input/lake/", **PARQUET})
    tasks = account.json_lines(f"s3://{BUCKET}/{result['inputs_key']}")
    assert [task.get("rows") for task in tasks] == [100, None]
    assert "rows" not in account.table.get_run("exec-1")


def test_an_object_rewritten_while_plan_reads_it_fails_the_run_naming_it(account):
    """The reads are pinned to the ETag listed: a newer version fails with a message that
    names the object, not a bare PreconditionFailed."""
    account.put("input/lake/a.parquet", parquet_bytes(_table(100)))
    rewrite = boto3.client("s3", region_name=account.s3.meta.region_name)

    def rewritten(params, **_):
        if params["Key"] == "input/lake/a.parquet":
            rewrite.put_object(Bucket=BUCKET, Key=params["Key"], Body=parquet_bytes(_table(7)))

    account.s3.meta.events.register("provide-client-params.s3.GetObject", rewritten)
    with pytest.raises(InputError, match=r"input/lake/a\.parquet changed while being read"):
        plan(account, {"input": f"s3://{BUCKET}/input/lake/", **PARQUET})
    assert account.table.get_run("exec-1") is None
