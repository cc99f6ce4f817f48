"""Plan: bad requests fail naming the key and a run id is
claimed once: a second start neither redoes nor overwrites the first run."""

from dataclasses import replace
from decimal import Decimal

import pytest

from batchinfer.errors import InputError, ValidationError
from batchinfer.instances.price_table import AS_OF
from batchinfer.instances.prices import table_price
from batchinfer.pipeline.contract.data_places import DataPlace
from batchinfer.pipeline.steps.plan import plan_run
from batchinfer.pipeline.storage.status_table import RUNNING, RunAlreadyExists

from .conftest import BUCKET

EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:runs:"


def plan(account, request, name="exec-1"):
    return plan_run(
        request,
        execution=EXECUTION + name,
        execution_name=name,
        started_at="2025-01-01T00:00:00Z",
        env=account.env,
        s3=account.s3,
        sagemaker=account.sagemaker,
        table=account.table,
    ).to_state()


@pytest.mark.parametrize(
    ("request_", "error", "message"),
    [
        ({}, ValidationError, r"input: required"),
        (
            {"input": "s3://x"},
            ValidationError,
            r"input: 's3://x' is outside the places this stack's runs may use for it: "
            r"s3://batchinfer-test-data/input/ \(data\)",
        ),
        ({"input": "/tmp/data.csv"}, ValidationError, r"input: '/tmp/data.csv' is not an S3 URI"),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "contnet_type": "x"},
            ValidationError,
            r"request: unknown key 'contnet_type'",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "split_type": "Lines"},
            ValidationError,
            r"split_type \(SplitType\): 'Lines' is not allowed; did you mean 'Line'\?",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "engine": "emr"},
            ValidationError,
            r"engine: 'emr' is not allowed",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "run_id": "a b"},
            ValidationError,
            r"run_id: 'a b' is not allowed",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "output": f"s3://{BUCKET}/runs/"},
            ValidationError,
            r"output: .* is outside .* for it: s3://batchinfer-test-data/output/ \(data\)",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "merge": True, "assemble_with": "None"},
            ValidationError,
            r"merge: needs assemble_with Line",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "split_type": "None", "shards": 4},
            ValidationError,
            r"shards: needs split_type Line",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "instance_type": "ml.m5.larg"},
            ValidationError,
            r"'ml\.m5\.larg' is not an instance type SageMaker accepts for transform jobs; "
            r"nearest: ml\.m5\.large",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "shards": 2, "shard_size": "1MiB"},
            ValidationError,
            r"give one of them",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "estimate": 5},
            ValidationError,
            r"estimate: expected an object",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "estimate": {"rows_per_sec": 5}},
            ValidationError,
            r"estimate: unknown key 'rows_per_sec'; known keys: busy_cpus, bytes_per_second",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "estimate": {"rows_per_second": 5}},
            ValidationError,
            r"estimate\.bytes_per_second: required with rows_per_second",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "estimate": {"bytes_per_second": 0}},
            ValidationError,
            r"estimate\.bytes_per_second: 0 is not a number above 0",
        ),
        (
            {
                "input": f"s3://{BUCKET}/input/d.csv",
                "estimate": {"bytes_per_second": 1, "busy_cpus": 1.5},
            },
            ValidationError,
            r"estimate\.busy_cpus: 1\.5 is not an integer >= 1",
        ),
        (
            {"input": f"s3://{BUCKET}/input/d.csv", "estimate": {"usd_per_hour": "cheap"}},
            ValidationError,
            r"estimate\.usd_per_hour: 'cheap' is not a number 0 or more",
        ),
        (
            {"input": f"s3://{BUCKET}/input/nothing/"},
            InputError,
            r"input: no objects under s3://batchinfer-test-data/input/nothing/",
        ),
        (
            {"input": f"s3://{BUCKET}/input/", "names": "d.csv"},
            ValidationError,
            r"names: 'd\.csv' is not allowed; allowed: a non-empty list of object paths",
        ),
        (
            {"input": f"s3://{BUCKET}/input/", "names": []},
            ValidationError,
            r"names: \[\] is not allowed",
        ),
        (
            {"input": f"s3://{BUCKET}/input/", "names": ["d.csv", "sub/"]},
            ValidationError,
            r"names\[1\]: 'sub/' is not an object path relative to input",
        ),
        (
            {"input": f"s3://{BUCKET}/input/", "names": ["d.csv", "d.csv"]},
            ValidationError,
            r"names\[1\]: 'd\.csv' is named twice",
        ),
        (
            {"input": f"s3://{BUCKET}/input/", "names": ["d.csv", "d"]},
            InputError,
            r"names\[1\]: no object s3://batchinfer-test-data/input/d$",
        ),
        (
            {"input": f"s3://{BUCKET}/input/", "include": "*.csv"},
            ValidationError,
            r"include: '\*\.csv' is not allowed; allowed: a list of glob patterns",
        ),
        (
            {"input": f"s3://{BUCKET}/input/", "exclude": ["*.tmp", ""]},
            ValidationError,
            r"exclude\[1\]: '' is not a glob pattern",
        ),
        (
            {"input": f"s3://{BUCKET}/input/", "include": ["*.json"]},
            InputError,
            r"input: no objects under s3://batchinfer-test-data/input/: 1 object \(d\.csv\) "
            r"not selected by include '\*\.json'$",
        ),
    ],
)
def test_bad_requests_fail_naming_the_key(account, request_, error, message):
    account.put("input/d.csv", b"1,2\n")
    with pytest.raises(error, match=message):
        plan(account, request_)
    assert account.table.get_run("exec-1") is None, "nothing is claimed for a bad request"


def test_empty_input_is_an_input_error(account):
    account.put("input/empty/a.csv", b"")
    with pytest.raises(InputError, match=r"every object under .*input/empty/ is empty"):
        plan(account, {"input": f"s3://{BUCKET}/input/empty/"})


def test_plan_uses_stack_defaults_and_writes_split_tasks(account):
    account.put("input/d.csv", b"1,2\n")
    result = plan(account, {"input": f"s3://{BUCKET}/input/d.csv", "instance_count": 2})
    assert result["settings"]["content_type"] == "text/csv"  # from the stack
    assert result["settings"]["instance_count"] == 2  # from the request
    assert result["job_output"] == result["output"] == f"s3://{BUCKET}/output/exec-1/"
    assert result["job_base"] == "bi-test-exec-1"
    items = account.json_lines(f"s3://{BUCKET}/{result['inputs_key']}")
    assert items == [
        {
            "input": f"s3://{BUCKET}/input/d.csv",
            "output": f"s3://{BUCKET}/shards/exec-1/",
            "compression_type": "None",
            "header": False,
            "shard_size": 64 * 1024 * 1024,
            "splitter": "lambda",
        }
    ]
    run = account.table.get_run("exec-1")
    assert run["run_status"] == RUNNING and run["execution_arn"] == EXECUTION + "exec-1"
    assert run["split_jobs"] == 0 and "split_job_threshold" not in run


def test_plan_gives_gzip_objects_above_the_threshold_to_a_split_job(account):
    """Compressed size x 5 against the threshold; plain objects are copied by S3 and stay
    with the Lambda whatever their size."""
    account.put("input/z/big.csv.gz", b"x" * 300)  # 1,500 bytes streamed
    account.put("input/z/small.csv.gz", b"x" * 100)  # 500
    account.put("input/z/plain.csv", b"1,2\n" * 1000)
    account.env = replace(account.env, split_job_threshold=1000)
    result = plan(account, {"input": f"s3://{BUCKET}/input/z/", "shards": 2}, name="z")
    items = {
        item["input"].rsplit("/", 1)[1]: item
        for item in account.json_lines(f"s3://{BUCKET}/{result['inputs_key']}")
    }
    assert {name: item["splitter"] for name, item in items.items()} == {
        "big.csv.gz": "job",
        "small.csv.gz": "lambda",
        "plain.csv": "lambda",
    }
    assert items["big.csv.gz"]["job"] == {
        "base": "bi-test-z",
        "run_id": "z",
        "arguments": [
            f"s3://{BUCKET}/input/z/big.csv.gz",
            "--output",
            f"s3://{BUCKET}/shards/z/",
            "--shards",
            "2",
            "--compression-type",
            "None",
        ],
    }
    assert "job" not in items["small.csv.gz"]
    run = account.table.get_run("z")
    assert run["split_job_threshold"] == 1000 and run["split_jobs"] == 1


def test_names_take_only_the_named_objects_of_the_prefix_r4(account):
    """With ``names`` a run takes prefix + each name (as a ManifestFile, R4), not the other
    objects under the prefix, nor a key the name is only a prefix of."""
    for key in ("input/in/a.csv", "input/in/a.csv.bak", "input/in/sub/b.csv", "input/in/c.csv"):
        account.put(key, b"1,2\n")
    result = plan(account, {"input": f"s3://{BUCKET}/input/in/", "names": ["sub/b.csv", "a.csv"]})
    items = account.json_lines(f"s3://{BUCKET}/{result['inputs_key']}")
    assert [(i["input"], i["output"]) for i in items] == [
        (f"s3://{BUCKET}/input/in/sub/b.csv", f"s3://{BUCKET}/shards/exec-1/sub/"),
        (f"s3://{BUCKET}/input/in/a.csv", f"s3://{BUCKET}/shards/exec-1/"),
    ]
    assert result["objects"] == 2 and result["bytes"] == 8
    assert result["input"] == f"s3://{BUCKET}/input/in/"


def split_inputs(account, result):
    """The objects Plan wrote split tasks for, relative to the folder of the run's input."""
    items = account.json_lines(f"s3://{BUCKET}/{result['inputs_key']}")
    folder = result["input"][: result["input"].rfind("/") + 1]
    return [item["input"].removeprefix(folder) for item in items]


SPARK_OUTPUT = (
    "part-00000.csv",
    "day1/a.csv",
    "_SUCCESS",
    "_committed_4711",
    ".part-00000.csv.crc",
    "_temporary/0/part-00001.csv",
)


def test_hidden_and_underscore_keys_under_the_input_are_no_inputs_unless_named_r4(account):
    """What a Spark or Hadoop job leaves beside its data is left out of a prefix (R4); a
    request's names, and a prefix that names an object, always take it."""
    for key in SPARK_OUTPUT:
        account.put(f"input/spark/{key}", b"1,2\n")
    result = plan(account, {"input": f"s3://{BUCKET}/input/spark/"})
    assert split_inputs(account, result) == ["day1/a.csv", "part-00000.csv"]
    assert result["objects"] == 2
    named = {"input": f"s3://{BUCKET}/input/spark/", "names": ["_committed_4711"]}
    assert split_inputs(account, plan(account, named, "named")) == ["_committed_4711"]
    prefix = {"input": f"s3://{BUCKET}/input/spark/_SUCCESS"}
    assert split_inputs(account, plan(account, prefix, "prefix")) == ["_SUCCESS"]


def test_include_and_exclude_select_among_the_objects_and_names_r4(account):
    for key in ("a.csv", "b.csv", "x.json", "day2/c.csv", "_SUCCESS"):
        account.put(f"input/sel/{key}", b"1,2\n")
    request = {"input": f"s3://{BUCKET}/input/sel/", "include": ["*.csv"], "exclude": ["b*"]}
    assert split_inputs(account, plan(account, request)) == ["a.csv", "day2/c.csv"]
    named = request | {"names": ["b.csv", "x.json", "day2/c.csv"]}
    assert split_inputs(account, plan(account, named, "named")) == ["day2/c.csv"]


def test_a_prefix_holding_only_stray_objects_is_an_input_error_saying_so_r4(account):
    account.put("input/done/_SUCCESS", b"")
    with pytest.raises(InputError) as info:
        plan(account, {"input": f"s3://{BUCKET}/input/done/"})
    assert str(info.value) == (
        f"input: no objects under s3://{BUCKET}/input/done/: 1 object (_SUCCESS) hidden or "
        "_-prefixed, which are inputs only when named"
    )


def test_same_run_id_twice_claims_once_and_keeps_the_first(account):
    account.put("input/d.csv", b"1,2\n")
    plan(account, {"input": f"s3://{BUCKET}/input/d.csv", "run_id": "nightly-1"}, "first")
    inputs_before = account.get(f"s3://{BUCKET}/runs/nightly-1/inputs.jsonl")
    with pytest.raises(RunAlreadyExists, match=r"run 'nightly-1' already exists .*RUNNING"):
        plan(
            account,
            {"input": f"s3://{BUCKET}/input/d.csv", "run_id": "nightly-1", "shards": 3},
            "second",
        )
    run = account.table.get_run("nightly-1")
    assert run["execution_arn"] == EXECUTION + "first"
    assert account.get(f"s3://{BUCKET}/runs/nightly-1/inputs.jsonl") == inputs_before
    assert RunAlreadyExists.__name__ == "RunAlreadyExists"  # the state machine's Catch name


LAKE = DataPlace("lake", "acme-lake", "scoring/", "arn:aws:kms:eu-west-1:123456789012:key/lake")
REPORTS = DataPlace("reports", "acme-reports", "batch/", "")


@pytest.fixture
def with_places(account):
    for place in (LAKE, REPORTS):
        account.s3.create_bucket(
            Bucket=place.bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
        )
    account.env = replace(
        account.env,
        data_sources=(LAKE,),
        output_destinations=(REPORTS,),
    )
    return account


def test_plan_reads_a_configured_source_and_writes_a_destination(with_places):
    with_places.s3.put_object(Bucket="acme-lake", Key="scoring/2026/a.csv", Body=b"1,2\n")
    result = plan(
        with_places,
        {"input": "s3://acme-lake/scoring/2026/", "output": "s3://acme-reports/batch/2026"},
    )
    assert result["input"] == "s3://acme-lake/scoring/2026/"
    assert result["output"] == result["job_output"] == "s3://acme-reports/batch/2026/"
    (task,) = with_places.json_lines(f"s3://{BUCKET}/{result['inputs_key']}")
    assert task["input"] == "s3://acme-lake/scoring/2026/a.csv"
    assert task["output"] == f"s3://{BUCKET}/shards/exec-1/"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (
            {"input": "s3://acme-lake/raw/a.csv"},
            r"input: 's3://acme-lake/raw/a.csv' is outside the places this stack's runs may "
            r"use for it: s3://batchinfer-test-data/input/ \(data\), "
            r"s3://acme-lake/scoring/ \(lake\)$",
        ),
        (
            {"input": "s3://acme-lake/scoring/a.csv", "output": "s3://acme-lake/scoring/out/"},
            r"output: .* for it: s3://batchinfer-test-data/output/ \(data\), "
            r"s3://acme-reports/batch/ \(reports\)$",
        ),
    ],
)
def test_places_not_configured_are_refused_listing_the_allowed_ones(with_places, request_, message):
    with_places.s3.put_object(Bucket="acme-lake", Key="scoring/a.csv", Body=b"1,2\n")
    with pytest.raises(ValidationError, match=message):
        plan(with_places, request_)


def _two_objects(account) -> dict:
    account.put("input/day/a.csv", b"1,2\n" * 750)  # 3,000 bytes
    account.put("input/day/b.csv", b"1,2\n" * 250)  # 1,000 bytes
    return {
        "input": f"s3://{BUCKET}/input/day/",
        "shards": 2,
        "instance_count": 2,
        "instance_type": "ml.m5.xlarge",
    }


def test_the_run_item_holds_the_estimate_that_needs_no_throughput(account):
    plan(account, _two_objects(account))
    estimate = account.table.get_run("exec-1")["estimate"]
    assert estimate == {
        "objects": 2,
        "bytes": 4000,
        "shards": 4,  # two per object, as asked
        "instances": 2,
        "jobs": 1,
        "instance_type": "ml.m5.xlarge",
        "usd_per_hour": Decimal(str(table_price("ml.m5.xlarge", "eu-west-1"))),
        "price_source": f"indicative list price, eu-west-1, as of {AS_OF}",
    }


def test_a_measured_throughput_in_the_request_gives_the_duration_and_cost(account):
    request = _two_objects(account) | {
        "estimate": {"bytes_per_second": 500, "rows_per_second": 125, "busy_cpus": 2}
    }
    plan(account, request)
    estimate = account.table.get_run("exec-1")["estimate"]
    # 250 B/s per busy CPU; an m5.xlarge keeps its 4 vCPUs busy (MaxConcurrentTransforms
    # as its server answers, R10): 1,000 B/s. Shards of 1,500, 1,500, 500 and 500 bytes
    # from a queue on 2 instances: 1.5 s + 0.5 s each.
    assert estimate["basis"] == "bytes"
    assert estimate["bytes_per_second"] == 1000 and estimate["rows_per_second"] == 250
    assert estimate["job_seconds"] == 2
    hours = 2 * 2.0 / 3600
    assert estimate["instance_hours"] == Decimal(f"{hours:.6g}")
    price = table_price("ml.m5.xlarge", "eu-west-1")
    assert estimate["cost_usd"] == Decimal(f"{hours * price:.6g}")
    assert all(not isinstance(v, float) for v in estimate.values())


def test_the_request_may_set_the_hourly_price(account):
    request = _two_objects(account) | {
        "instance_type": "ml.m5.large",
        "estimate": {"bytes_per_second": 4000, "usd_per_hour": 0.5},
    }
    plan(account, request)
    estimate = account.table.get_run("exec-1")["estimate"]
    assert estimate["usd_per_hour"] == Decimal("0.5")
    assert estimate["price_source"] == "the request's estimate.usd_per_hour"
    # 4,000 B/s on one busy CPU; an m5.large keeps 2 busy: 8,000 B/s; 2,000 bytes each
    assert estimate["job_seconds"] == Decimal("0.25")
    assert estimate["cost_usd"] == Decimal(f"{2 * 0.25 / 3600 * 0.5:.6g}")


def test_an_object_whose_shard_key_passes_1024_utf8_bytes_is_refused_naming_it(account):
    """S3 takes keys of at most 1,024 bytes of UTF-8. An input key of 505 characters and
    1,010 bytes is one S3 holds, but its shards' keys (``shards/<run>/…part-NNNNN.csv``)
    would pass 1,024 bytes though they stay under 1,024 characters: Plan refuses the run,
    naming the object and the key, before anything is written."""
    key = "input/" + "é" * 500 + ".csv"
    assert len(key) < 1024 < len(key.encode()) + len("shards/exec-1/.part-00000")
    account.put(key, b"1,2\n")
    with pytest.raises(ValidationError) as refused:
        plan(account, {"input": f"s3://{BUCKET}/input/"})
    message = str(refused.value)
    assert message.startswith(f"input: s3://{BUCKET}/{key} would be written as the shard ")
    assert "bytes of UTF-8" in message and "S3 keys take at most 1024 bytes" in message
    assert account.table.get_run("exec-1") is None, "nothing was recorded"


def test_a_run_output_prefix_counts_in_the_output_keys_bytes(account):
    """The merged output ``<output><name>.out`` is the longest key when the output prefix
    is long: a 2-byte character counts twice."""
    account.put("input/a.csv", b"1,2\n")
    output = f"s3://{BUCKET}/output/" + "ü" * 505 + "/"
    with pytest.raises(ValidationError, match=r"would be written as the output '.*a\.csv\.out'"):
        plan(account, {"input": f"s3://{BUCKET}/input/", "output": output, "merge": True})
    assert plan(account, {"input": f"s3://{BUCKET}/input/", "output": output[:-300] + "/"})


def test_quarantine_in_a_transform_job_is_refused_on_a_framework_image(account):
    """AWS's framework images fail a transform job on a refused record (R19): only
    batchinfer's model server sets records aside, so Plan refuses the run before any work."""
    account.put("input/q.csv", b"1,2\n")
    account.env = replace(account.env, framework_image="sklearn 1.2-1")
    request = {
        "input": f"s3://{BUCKET}/input/q.csv",
        "bad_records": "quarantine",
        "split_type": "Line",
        "assemble_with": "Line",
    }
    with pytest.raises(ValidationError, match=r"AWS's sklearn 1\.2-1 image, which fails the job"):
        plan(account, request)
    assert plan(account, request | {"bad_records": "fail"})["settings"]["bad_records"] == "fail"
