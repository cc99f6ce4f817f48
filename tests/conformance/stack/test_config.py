"""Config validation at synth: clear messages naming the environment and
key; the two example environments load."""

import copy
import json
import re
from dataclasses import fields

import pytest

from batchinfer.errors import ValidationError
from stacks.config import PipelineConfig, load_config, parse_config

from .conftest import REPO_ROOT

CONTEXT = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
DEV = CONTEXT["batchinfer:environments"]["dev"]


def _parse(**changes):
    raw = copy.deepcopy(DEV) | changes
    return parse_config("dev", raw, REPO_ROOT)


def test_both_example_environments_load_and_env_selects():
    dev = load_config(CONTEXT, None, REPO_ROOT)
    prod = load_config(CONTEXT, "prod", REPO_ROOT)
    assert (dev.name, prod.name) == ("dev", "prod")
    assert prod.account == "123456789012" and dev.account is None
    assert prod.schedules[0].name == "nightly-scoring"
    assert prod.s3_trigger is not None and prod.s3_trigger.prefix == "input/arrivals/"


def test_unknown_environment_names_the_known_ones():
    with pytest.raises(
        ValidationError, match=r"env: 'qa' is not a configured environment; known: dev, prod"
    ):
        load_config(CONTEXT, "qa", REPO_ROOT)


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        ({"instance_type": "m5.large"}, r"environments\.dev\.transform: instance_type .*'ml\.'"),
        ({"instance_count": 101}, r"instance_count \(InstanceCount\): 101 is out of range"),
        ({"max_payload_mb": 20, "max_concurrent_transforms": 6}, r"6 x 20 = 120 MB"),
        ({"split_typ": "Line"}, r"unknown key 'split_typ'; did you mean 'split_type'"),
    ],
)
def test_transform_defaults_are_validated_R1(transform, message):
    with pytest.raises(ValidationError, match=message):
        _parse(transform=DEV["transform"] | transform)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("cron(0 2 * * *)", "has 5 cron fields; EventBridge Scheduler needs 6"),
        ("cron(0 2 * * MON *)", "one of day-of-month and day-of-week must be '?'"),
        ("rate(1 days)", "use a singular unit for 1"),
        ("every day", "is not a schedule"),
    ],
)
def test_schedule_syntax_is_checked(expression, message):
    schedules = [{"name": "n", "expression": expression, "input": {"input": "s3://b/input/"}}]
    with pytest.raises(ValidationError, match=r"environments\.dev\.schedules\[0\]\.expression"):
        _parse(schedules=schedules)
    with pytest.raises(ValidationError, match=message):
        _parse(schedules=schedules)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"job_prefix": "BI-dev"}, r"job_prefix: 'BI-dev' is not allowed; allowed: 1-20 lowercase"),
        ({"instance_typ": "x"}, r"environments\.dev: unknown key 'instance_typ'"),
        ({"model_data": "models/missing.tar.gz"}, r"model_data: 'models/missing.tar.gz'"),
        ({"max_rounds": 0}, r"max_rounds: 0 is not allowed; allowed: an integer 1\.\.9"),
        ({"log_retention_days": 10}, r"log_retention_days: 10 is not allowed"),
        ({"log_execution_data": "yes"}, r"log_execution_data: 'yes' is not allowed; allowed: true"),
        ({"s3_trigger": {"prefix": "elsewhere/"}}, r"s3_trigger\.prefix: 'elsewhere/'"),
        (
            {"s3_trigger": {"prefix": "input/day(1)/"}},
            r"s3_trigger\.prefix: 'input/day\(1\)/' is not allowed; .*S3 URL-encodes",
        ),
        (
            {"s3_trigger": {"prefix": "input/a/", "request": {"run_id": "x"}}},
            r"s3_trigger\.request: .* allowed: an object of request keys without 'input', "
            r"'names' or 'run_id'",
        ),
        (
            {"s3_trigger": {"prefix": "input/a/", "batch_window_seconds": 301}},
            r"s3_trigger\.batch_window_seconds: 301 is not allowed; allowed: an integer 1\.\.300",
        ),
        ({"retry": {"backoff_rate": 0.5}}, r"retry\.backoff_rate: 0\.5 is not allowed"),
        ({"shard_size": "12 parsecs"}, r"shard_size: '12 parsecs' is not a size"),
        ({"engine": "endpoint"}, r"endpoints: \[\] is not allowed; allowed: at least one"),
        ({"endpoints": [{"name": "a_b"}]}, r"endpoints\[0\]\.name: 'a_b' is not allowed"),
        ({"endpoints": [{"name": "a", "weight": 1}]}, r"endpoints\[0\]: unknown key 'weight'"),
        ({"endpoints": [{"name": "a"}, {"name": "a"}]}, r"endpoints: \['a'\] is not allowed"),
        ({"endpoint_concurrency": 0}, r"endpoint_concurrency: 0 is not allowed"),
    ],
)
def test_stack_settings_are_validated(changes, message):
    with pytest.raises(ValidationError, match=message):
        _parse(**changes)


def test_local_model_tarball_is_accepted(tmp_path):
    (tmp_path / "model.tar.gz").write_bytes(b"")
    config = parse_config("dev", DEV | {"model_data": "model.tar.gz"}, tmp_path)
    assert config.is_local_model


def test_an_execution_timeout_shorter_than_its_longest_run_is_refused():
    """The execution must outlive its longest run, or it times out while a job it started
    still runs (and is billed): a split job, then max_rounds rounds each waiting admission's
    longest wait and running a job to its runtime limit, and the capacity waits between
    rounds. The error shows the sum; prod's 48 hours were short of it."""
    prod = CONTEXT["batchinfer:environments"]["prod"] | {"timeout_hours": 48}
    message = (
        r"environments\.prod\.timeout_hours: 48 is not allowed; allowed: at least 83 hours, the "
        r"longest run: a split job of 16 h \(processing_max_runtime_hours\) \+ 3 rounds "
        r"\(max_rounds\) x \(6 h admission wait \(admission\.max_wait_minutes 360\) \+ "
        r"16 h job \(processing_max_runtime_hours\)\) \+ 0\.75 h of capacity waits "
        r"\(retry\.capacity_wait_seconds 900, doubled each round, before rounds 2-3\) = "
        r"82\.75 h"
    )
    with pytest.raises(ValidationError, match=message):
        parse_config("prod", prod, REPO_ROOT)
    assert parse_config("prod", prod | {"timeout_hours": 83}, REPO_ROOT)
    # Without split jobs, no split job comes first.
    changes = {"timeout_hours": 18, "max_rounds": 2, "processing_max_runtime_hours": 4}
    changes |= {"admission": {"max_wait_minutes": 300}, "split_job_threshold": "off"}
    with pytest.raises(ValidationError, match=r"at least 19 hours, the longest run: 2 rounds"):
        _parse(**changes)
    assert _parse(**changes | {"timeout_hours": 19})


def test_shards_that_expire_before_the_execution_times_out_are_refused():
    """Shards live shard_expiry_days: a run may not outlast them (its later rounds and
    its merge read them)."""
    message = (
        r"environments\.dev\.shard_expiry_days: 1 is not allowed; allowed: at least 2 days: "
        r"shard_expiry_days x 24 must be at least timeout_hours \(36\)"
    )
    with pytest.raises(ValidationError, match=message):
        _parse(shard_expiry_days=1, timeout_hours=36)
    assert _parse(shard_expiry_days=2, timeout_hours=36)


def test_image_uri_must_be_an_ecr_image_with_a_tag_or_digest():
    uri = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/models/scorer:1.4"
    assert _parse(image_uri=uri).image_uri == uri
    for bad in ("scorer:1.4", "123456789012.dkr.ecr.eu-west-1.amazonaws.com/scorer"):
        with pytest.raises(ValidationError, match=r"environments\.dev\.image_uri: .*ECR image"):
            _parse(image_uri=bad)


def test_vpc_needs_subnet_and_security_group_ids():
    vpc = {"subnet_ids": ["subnet-0123456789abcdef0"], "security_group_ids": ["sg-01234567"]}
    assert _parse(vpc=vpc).vpc.subnet_ids == ("subnet-0123456789abcdef0",)
    with pytest.raises(ValidationError, match=r"environments\.dev\.vpc\.security_group_ids"):
        _parse(vpc={"subnet_ids": ["subnet-0123456789abcdef0"], "security_group_ids": []})
    with pytest.raises(ValidationError, match=r"environments\.dev\.vpc\.subnet_ids"):
        _parse(vpc={"subnet_ids": ["10.0.0.0/24"], "security_group_ids": ["sg-01234567"]})


def test_the_configuration_page_documents_every_config_key():
    page = (REPO_ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `([a-z0-9_]+)`(?:, `([a-z0-9_]+)`)? \|", page, re.MULTILINE))
    keys = {key for pair in documented for key in pair if key}
    assert {f.name for f in fields(PipelineConfig)} - {"name"} <= keys


LAKE = {"name": "lake", "bucket": "acme-lake", "prefix": "scoring/"}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"data_sources": [{"name": "data", "bucket": "acme-lake"}]},
            r"data_sources\[0\]\.name: 'data' is not allowed",
        ),
        ({"data_sources": [{"name": "lake"}]}, r"data_sources\[0\]\.bucket: required"),
        (
            {"data_sources": [LAKE | {"prefix": "scoring"}]},
            r"data_sources\[0\]\.prefix: 'scoring' is not allowed; allowed: empty .* ending",
        ),
        (
            {"output_destinations": [LAKE | {"kms_key_arn": "alias/lake"}]},
            r"output_destinations\[0\]\.kms_key_arn: 'alias/lake' is not allowed",
        ),
        ({"data_sources": [LAKE, LAKE]}, r"data_sources: \['lake'\] is not allowed"),
        (
            {
                "schedules": [
                    {
                        "name": "n",
                        "expression": "rate(1 day)",
                        "input": {"input": "bucket://pond/x/"},
                    }
                ]
            },
            r"schedules\[0\]\.input\.input: 'bucket://pond/x/' names no place; "
            r"known for .*: data, lake",
        ),
        (
            {
                "schedules": [
                    {
                        "name": "n",
                        "expression": "rate(1 day)",
                        "input": {"input": "s3://batchinfer-dev-data/input/"},
                    }
                ]
            },
            r"outside the places .*: s3://<data bucket>/input/ \(data\), "
            r"s3://acme-lake/scoring/ \(lake\); name the stack's data bucket as bucket://data/KEY",
        ),
        (
            {
                "schedules": [
                    {
                        "name": "n",
                        "expression": "rate(1 day)",
                        "input": {"input": "bucket://lake/raw/"},
                    }
                ]
            },
            r"'s3://acme-lake/raw/' is outside the places",
        ),
        (
            {"s3_trigger": {"source": "lake", "prefix": "arrivals/"}},
            r"s3_trigger\.prefix: 'arrivals/' is not allowed; allowed: a key prefix under "
            r"'scoring/'",
        ),
        (
            {"s3_trigger": {"prefix": "landing/"}},
            r"s3_trigger\.prefix: 'landing/' is not allowed; allowed: a key prefix under 'input/'",
        ),
        ({"s3_trigger": {"source": "pond", "prefix": "x/"}}, r"s3_trigger\.source: 'pond'"),
    ],
)
def test_existing_buckets_and_references_are_checked(changes, message):
    with pytest.raises(ValidationError, match=message):
        _parse(**({"data_sources": [LAKE]} | changes))


def test_references_resolve_to_the_places_they_name():
    config = _parse(
        data_sources=[LAKE],
        output_destinations=[{"name": "reports", "bucket": "acme-reports"}],
        s3_trigger={
            "source": "lake",
            "prefix": "scoring/new/",
            "request": {"output": "bucket://reports/x/"},
        },
    )
    request = {"input": "bucket://lake/scoring/a/", "output": "bucket://data/output/b/"}
    assert config.resolve_request(request, "generated", "here") == {
        "input": "s3://acme-lake/scoring/a/",
        "output": "s3://generated/output/b/",
    }
    assert config.s3_trigger is not None and config.s3_trigger.source == "lake"


GROUP = "arn:aws:sagemaker:eu-west-1:123456789012:model-package-group/scoring"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model_data": None}, r"environments\.dev: give exactly one of model_data, "),
        (
            {"model_package_arn": GROUP},
            r"give exactly one of .* \(got model_data, model_package_arn\)",
        ),
        (
            {"model_data": None, "model_package_arn": GROUP, "model_sources": []},
            r"environments\.dev\.model_sources: \[\] is not allowed; allowed: the s3:// prefixes",
        ),
        (
            {"model_data": None, "model_package_arn": "scoring"},
            r"model_package_arn: 'scoring' is not allowed; allowed: a model package version ARN",
        ),
        (
            {"model_data": None, "model_name": "scoring", "engine": "processing"},
            r"environments\.dev\.engine: 'processing' is not allowed; allowed: transform with "
            r"model_name",
        ),
        ({"model_sources": ["models/"]}, r"model_sources\[0\]: 'models/' is not allowed"),
    ],
)
def test_the_model_is_one_of_three_choices(changes, message):
    with pytest.raises(ValidationError, match=message):
        _parse(**changes)


def test_a_package_or_an_existing_model_configures_without_model_data():
    package = _parse(model_data=None, model_package_arn=GROUP, model_sources=["s3://m/p/"])
    existing = _parse(model_data=None, model_name="scoring-v3", model_sources=[])
    assert package.model_source_list == ["s3://m/p/"]
    assert existing.model_name == "scoring-v3" and existing.model_source_list == []


@pytest.mark.parametrize(
    ("admission", "message"),
    [
        (
            {"instance_budget": {"ml.m5.xlarg": 8}},
            r"environments\.dev\.admission\.instance_budget: 'ml\.m5\.xlarg' is not allowed; "
            r"allowed: SageMaker job instance types, e\.g\. ml\.m5\.xlarge",
        ),
        (
            {"instance_budget": {"ml.m5.xlarge": 0}},
            r"admission\.instance_budget\.ml\.m5\.xlarge: 0 is not allowed",
        ),
        ({"instance_budget": [8]}, r"admission\.instance_budget: expected an object"),
        ({"poll_second": 5}, r"admission: unknown key 'poll_second'"),
        ({"default_budget": 0}, r"admission\.default_budget: 0 is not allowed"),
    ],
)
def test_admission_errors_name_the_key(admission, message):
    with pytest.raises(ValidationError, match=message):
        _parse(admission=admission)


def test_a_wait_loop_that_could_fill_the_execution_history_is_refused():
    """Polling every 5 s for 6 hours over 3 rounds: 3 x 4,321 turns of the loop, far past
    what a Standard execution's 25,000 history events hold."""
    with pytest.raises(
        ValidationError,
        match=r"admission\.poll_seconds: 5 is not allowed; allowed: a wait of 360 minutes at "
        r"this interval over 3 rounds can write 117,[0-9]{3} history events, more than the "
        r"20,000 allowed",
    ):
        _parse(admission={"poll_seconds": 5})
    config = _parse(admission={"poll_seconds": 5, "max_wait_minutes": 30})
    assert config.admission.poll_seconds == 5


def test_admission_defaults_and_budgets():
    config = _parse(admission={"instance_budget": {"ml.m5.xlarge": 8}})
    assert dict(config.admission.instance_budget) == {"ml.m5.xlarge": 8}
    assert config.admission.default_budget == 2 and config.admission.poll_seconds == 60


def test_a_budget_below_the_default_instance_count_is_refused():
    """prod's runs take 4 ml.c5.2xlarge by default: a budget of 2 would fail them all."""
    prod = copy.deepcopy(CONTEXT["batchinfer:environments"]["prod"])
    prod["admission"] = {"instance_budget": {"ml.c5.2xlarge": 2}}
    with pytest.raises(
        ValidationError,
        match=r"prod\.admission\.instance_budget: \{'ml\.c5\.2xlarge': 2\} is not allowed; "
        r"allowed: a budget of at least 4 ml\.c5\.2xlarge",
    ):
        parse_config("prod", prod, REPO_ROOT)
