"""TransformSettings: R1/R2/R15/R16/R20 validation, R10 precedence, R21/C6 environment."""

import pytest

from batchinfer.endpoints.scoring import endpoint_settings
from batchinfer.errors import ValidationError
from batchinfer.transform.job_api import to_api
from batchinfer.transform.settings import EffectiveSettings, TransformSettings, validate_job_name

CSV_LINES = dict(
    content_type="text/csv", accept="text/csv", split_type="Line", assemble_with="Line"
)


def accepts(**kwargs) -> TransformSettings:
    return TransformSettings.from_request(kwargs)


def rejects(match: str, **kwargs) -> str:
    with pytest.raises(ValidationError, match=match) as info:
        TransformSettings.from_request(kwargs)
    return str(info.value)


@pytest.mark.parametrize("value", [0, 1, 6, 100])
def test_r1_max_payload_in_range_is_accepted(value):
    assert accepts(max_payload_mb=value).max_payload_mb == value


@pytest.mark.parametrize("value", [-1, 101])
def test_r1_max_payload_out_of_range_names_field_value_and_range(value):
    message = rejects(r"max_payload_mb \(MaxPayloadInMB\)", max_payload_mb=value)
    assert str(value) in message and "0..100" in message


def test_r1_concurrency_times_payload_at_most_100():
    assert accepts(max_payload_mb=25, max_concurrent_transforms=4)
    message = rejects("MaxConcurrentTransforms", max_payload_mb=20, max_concurrent_transforms=6)
    assert "MaxPayloadInMB" in message and "120" in message and "100" in message


@pytest.mark.parametrize("count", [0, 101])
def test_r1_instance_count_1_to_100(count):
    assert accepts(instance_count=1) and accepts(instance_count=100)
    assert "1..100" in rejects(r"instance_count \(InstanceCount\)", instance_count=count)


def test_r1_filters_at_most_63_characters():
    path = "$." + "a" * 62
    message = rejects(
        r"input_filter \(InputFilter\)", content_type="application/json", input_filter=path
    )
    assert "64 characters" in message and "63" in message
    assert accepts(content_type="application/json", input_filter=path[:63])


def test_r1_environment_limits():
    assert accepts(environment={f"K{i}": "v" for i in range(16)})
    assert "17 entries" in rejects("Environment", environment={f"K{i}": "v" for i in range(17)})
    for key in ("1A", "A-B", ""):
        assert repr(key) in rejects("Environment", environment={key: "v"})
    assert "10241" in rejects("Environment", environment={"K": "x" * 10241})
    assert accepts(environment={"_K9": "x" * 10240})
    assert "string" in rejects("Environment", environment={"K": 1})
    assert "object" in rejects("Environment", environment=["K=v"])


@pytest.mark.parametrize(
    ("key", "pascal", "bad", "allowed"),
    [
        ("split_type", "SplitType", "Lines", "None, Line, RecordIO, TFRecord"),
        ("batch_strategy", "BatchStrategy", "Multi", "MultiRecord, SingleRecord"),
        ("assemble_with", "AssembleWith", "Newline", "None, Line"),
        ("join_source", "JoinSource", "Output", "None, Input"),
        ("compression_type", "CompressionType", "zip", "None, Gzip"),
    ],
)
def test_r2_enums_name_field_value_and_allowed(key, pascal, bad, allowed):
    message = rejects(rf"{key} \({pascal}\)", **{key: bad})
    assert repr(bad) in message and allowed in message


@pytest.mark.parametrize(
    ("key", "bad", "meant"),
    [
        ("batch_strategy", "MultiRecrod", "MultiRecord"),
        ("batch_strategy", "single-record", "SingleRecord"),
        ("split_type", "Lines", "Line"),
        ("assemble_with", "Lines", "Line"),
        ("compression_type", "gz", "Gzip"),
    ],
)
def test_r2_a_misspelt_enum_value_suggests_the_closest_one(key, bad, meant):
    message = rejects(key, **{key: bad})
    assert f"{bad!r} is not allowed; did you mean {meant!r}? allowed: " in message


def test_r2_enum_suggestions_match_case_first_and_stay_quiet_when_nothing_is_close():
    with pytest.raises(ValidationError, match=r"'multirecord' .*did you mean 'MultiRecord'\?"):
        TransformSettings(batch_strategy="multirecord").validate()
    assert "did you mean" not in rejects("join_source", join_source="xyzzy")


@pytest.mark.parametrize(
    ("key", "low", "high"),
    [("invocations_timeout_seconds", 1, 3600), ("invocations_max_retries", 0, 3)],
)
def test_r20_model_client_config_ranges(key, low, high):
    assert accepts(**{key: low}) and accepts(**{key: high})
    for bad in (low - 1, high + 1):
        assert f"{low}..{high}" in rejects(key, **{key: bad})


def test_instance_type_must_be_a_sagemaker_type():
    assert "ml." in rejects(r"instance_type \(InstanceType\)", instance_type="m5.xlarge")


def test_wrong_types_are_named():
    assert "not an integer" in rejects("max_payload_mb", max_payload_mb="6")
    assert "not an integer" in rejects("instance_count", instance_count=True)
    assert "not a string" in rejects("split_type", split_type=1)


def test_r15_csv_data_processing_needs_line_split_and_line_assembly():
    message = rejects("SplitType", content_type="text/csv", input_filter="$[1:]")
    assert "AssembleWith" in message and "'Line'" in message
    assert accepts(**CSV_LINES, input_filter="$[1:]")


def test_r15_join_needs_accept_equal_content_type():
    message = rejects(
        r"accept \(Accept\)",
        content_type="application/jsonlines",
        accept="application/json",
        split_type="Line",
        assemble_with="Line",
        join_source="Input",
    )
    assert "application/json" in message and "join" in message


def test_r15_join_needs_assemble_with_equal_split_type():
    message = rejects(
        r"assemble_with \(AssembleWith\)",
        content_type="application/json",
        accept="application/json",
        split_type="Line",
        join_source="Input",
    )
    assert "SplitType" in message
    assert accepts(content_type="application/json", accept="application/json", join_source="Input")


@pytest.mark.parametrize("content_type", ["application/x-parquet", None])
def test_r15_filters_only_for_csv_and_json(content_type):
    message = rejects(
        r"content_type \(ContentType\)", content_type=content_type, input_filter="$[1:]"
    )
    assert "text/csv, application/json, application/jsonlines" in message


def test_r15_output_filter_checks_accept():
    assert "Accept" in rejects("accept", accept="text/plain", output_filter="$[0]")
    assert accepts(accept="application/json; charset=utf-8", output_filter="$.a")


def test_r16_filter_syntax_checked_at_validation():
    message = rejects(r"input_filter \(InputFilter\)", **CSV_LINES, input_filter="$[0:2,5:]")
    assert "$[0:2,5:]" in message and "one range" in message
    rejects(r"output_filter \(OutputFilter\)", **CSV_LINES, output_filter="$..a")


def test_r16_csv_rows_take_index_paths_only():
    assert "arrays" in rejects("input_filter", **CSV_LINES, input_filter="$.features")
    assert "arrays" in rejects("output_filter", **CSV_LINES, output_filter="$['a']")


def test_all_problems_reported_together():
    message = rejects("max_payload_mb", max_payload_mb=101, instance_count=0)
    assert "instance_count" in message


def test_from_request_unknown_key_suggests_closest():
    with pytest.raises(ValidationError, match=r"unknown key 'max_paylod_mb'.*'max_payload_mb'"):
        TransformSettings.from_request({"max_paylod_mb": 1})
    with pytest.raises(ValidationError, match=r"'MaxPayloadInMB'.*did you mean 'max_payload_mb'"):
        TransformSettings.from_request({"MaxPayloadInMB": 1})


def test_from_request_defaults_nulls_and_enum_spellings():
    defaults = {"instance_type": "ml.c5.2xlarge", "max_payload_mb": 4}
    settings = TransformSettings.from_request(
        {"split_type": "line", "batch_strategy": "SINGLE_RECORD", "max_payload_mb": None},
        defaults,
    )
    assert settings.split_type == "Line"
    assert settings.batch_strategy == "SingleRecord"
    assert settings.instance_type == "ml.c5.2xlarge"
    assert settings.max_payload_mb == 4
    with pytest.raises(ValidationError, match=r"defaults: unknown key 'colour'"):
        TransformSettings.from_request({}, {"colour": "red"})
    with pytest.raises(ValidationError, match=r"instance_count.*not an integer"):
        TransformSettings.from_request({"instance_count": "2"})
    assert (
        "input" not in TransformSettings.request_keys()
        and "split_type" in TransformSettings.request_keys()
    )


def test_r10_e10_container_values_apply_when_the_job_sets_none():
    container = {
        "BatchStrategy": "SINGLE_RECORD",
        "MaxPayloadInMB": 2,
        "MaxConcurrentTransforms": 4,
    }
    assert TransformSettings().resolve(container) == EffectiveSettings("SingleRecord", 2, 4)
    assert TransformSettings(max_payload_mb=1).resolve(container) == EffectiveSettings(
        "SingleRecord", 1, 4
    )


def test_r10_job_values_win_then_defaults():
    job = TransformSettings(batch_strategy="MultiRecord", max_concurrent_transforms=2)
    assert job.resolve({"BatchStrategy": "SingleRecord"}) == EffectiveSettings("MultiRecord", 6, 2)
    assert TransformSettings().resolve(None) == EffectiveSettings("MultiRecord", 6, 1)
    assert TransformSettings().resolve({"BatchStrategy": "MULTI_RECORD"}).batch_strategy == (
        "MultiRecord"
    )


def test_r8_payload_zero_means_no_limit():
    assert TransformSettings(max_payload_mb=0).resolve().max_payload_bytes is None
    assert TransformSettings(max_payload_mb=2).resolve().max_payload_bytes == 2 * 1024 * 1024


@pytest.mark.parametrize(
    "container",
    [{"BatchStrategy": "BATCH"}, {"MaxPayloadInMB": 101}, {"MaxConcurrentTransforms": "4"}],
)
def test_r10_bad_container_execution_parameters_are_named(container):
    with pytest.raises(ValidationError, match=f"/execution-parameters {next(iter(container))}"):
        TransformSettings().resolve(container)


def test_r21_c6_container_environment_precedence():
    settings = TransformSettings(
        environment={"A": "job", "SAGEMAKER_BATCH": "false"},
        max_payload_mb=4,
        batch_strategy="SingleRecord",
    )
    env = settings.container_environment({"A": "model", "B": "model"})
    assert env == {
        "A": "job",
        "B": "model",
        "SAGEMAKER_BATCH": "true",
        "SAGEMAKER_MAX_PAYLOAD_IN_MB": "4",
        "SAGEMAKER_BATCH_STRATEGY": "SINGLE_RECORD",
    }
    assert TransformSettings(max_concurrent_transforms=3).container_environment() == {
        "SAGEMAKER_BATCH": "true",
        "SAGEMAKER_MAX_CONCURRENT_TRANSFORMS": "3",
    }


def test_s1_to_api_pascal_case_fragments_omit_unset_values():
    settings = TransformSettings(
        **CSV_LINES,
        input_filter="$[1:]",
        join_source="Input",
        max_payload_mb=1,
        environment={"K": "v"},
    )
    api = to_api(settings, input_uri="s3://b/in/", output_path="s3://b/out/")
    assert api == {
        "TransformInput": {
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/in/"}},
            "ContentType": "text/csv",
            "CompressionType": "None",
            "SplitType": "Line",
        },
        "TransformOutput": {
            "S3OutputPath": "s3://b/out/",
            "Accept": "text/csv",
            "AssembleWith": "Line",
        },
        "TransformResources": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 1},
        "ModelClientConfig": {"InvocationsTimeoutInSeconds": 600, "InvocationsMaxRetries": 3},
        "DataProcessing": {"InputFilter": "$[1:]", "OutputFilter": "$", "JoinSource": "Input"},
        "MaxPayloadInMB": 1,
        "Environment": {"K": "v"},
    }
    bare = to_api(TransformSettings())
    assert "DataProcessing" not in bare and "BatchStrategy" not in bare
    assert "ContentType" not in bare["TransformInput"] and "Environment" not in bare
    with pytest.raises(ValidationError, match=r"S3DataType"):
        to_api(TransformSettings(), input_uri="s3://b/m.json", data_type="Manifest")
    with pytest.raises(ValidationError, match=r"S3Uri"):
        to_api(TransformSettings(), input_uri="b/in/")


@pytest.mark.parametrize("name", ["a-b--c9", "a", "A1", "x" * 63])
def test_r1_e10_valid_job_names(name):
    assert validate_job_name(name) == name


@pytest.mark.parametrize("name", ["job_1", "x" * 64, "", "-a", "a-", "a b"])
def test_r1_e10_invalid_job_names(name):
    with pytest.raises(ValidationError, match=r"TransformJobName"):
        validate_job_name(name)


@pytest.mark.parametrize(
    "content_type", ["application/x-parquet", "application/vnd.apache.parquet"]
)
def test_r6_parquet_is_framed_whole_and_answered_whole(content_type):
    """A Parquet file is not made of lines (R6: what a record is under each SplitType), and
    a Parquet answer is a whole file (R13: AssembleWith Line would add a newline after it)."""
    with pytest.raises(ValidationError) as info:
        TransformSettings(
            content_type=content_type, split_type="Line", assemble_with="Line"
        ).validate()
    assert str(info.value) == (
        f"split_type (SplitType): 'Line'; Parquet input (content_type (ContentType) "
        f"'{content_type}') is not made of lines: each file is sent whole, as one request; "
        "set 'None'; assemble_with (AssembleWith): 'Line'; a Parquet answer is a whole Parquet "
        "file, which a newline after it would break; set 'None'"
    )
    whole = TransformSettings(content_type=content_type).validate()
    assert whole.counts_records  # rows, from the footers of the file and of the answer
    assert not TransformSettings(content_type=content_type, accept="text/csv").counts_records
    csv_in = TransformSettings(content_type="text/csv", accept=content_type)
    assert csv_in.answers_parquet and not csv_in.parquet_in and not csv_in.counts_records


def test_r17_a_parquet_join_is_the_model_servers_not_the_platforms():
    """SageMaker's DataProcessing joins CSV and JSON only: a Parquet join asks for none, and
    the job's Environment tells the model server to make it (an endpoint's, each request's
    CustomAttributes); a filter is still refused."""
    parquet = dict(content_type="application/x-parquet", accept="application/x-parquet")
    joined = TransformSettings(**parquet, join_source="Input", environment={"A": "1"}).validate()
    assert joined.server_joins and not joined.uses_data_processing
    request = to_api(joined)
    assert "DataProcessing" not in request
    assert request["Environment"] == {"A": "1", "BATCHINFER_JOIN_SOURCE": "Input"}
    assert joined.container_environment({})["BATCHINFER_JOIN_SOURCE"] == "Input"
    assert "BATCHINFER_JOIN_SOURCE" not in TransformSettings(**parquet).container_environment({})
    with pytest.raises(ValidationError, match="a join \\(DataProcessing\\) needs one of"):
        TransformSettings(**parquet, join_source="Input", input_filter="$[0]").validate()
    endpoint_settings(joined)  # an endpoint is told in each request's CustomAttributes


LINES_CSV = dict(content_type="text/csv", split_type="Line", assemble_with="Line")


def test_quarantine_rides_in_the_models_environment_and_back_from_the_api():
    """bad_records is batchinfer's own: the job's Environment carries it to the model
    server (BATCHINFER_MAX_BAD_RECORDS), and a CreateTransformJob request gives it back."""
    from batchinfer.transform.job_api import from_api

    capped = TransformSettings.from_request(
        {**LINES_CSV, "bad_records": "Quarantine", "max_bad_records": 3}
    )
    assert capped.job_environment == {"BATCHINFER_MAX_BAD_RECORDS": "3"}
    unlimited = TransformSettings.from_request({**LINES_CSV, "bad_records": "quarantine"})
    assert unlimited.bad_record_allowance == 2**31 - 1
    for settings in (capped, unlimited):
        assert from_api(to_api(settings)) == settings
    assert TransformSettings.from_request(LINES_CSV).job_environment == {}


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"content_type": "application/x-parquet", "split_type": "None"}, "split_type and"),
        ({"content_type": "application/json"}, "content_type text/csv or application/jsonlines"),
        ({"accept": "application/json"}, "an answer (accept) in text/csv"),
        ({"join_source": "Input", "accept": "text/csv"}, "no join_source nor output_filter"),
        ({"batch_strategy": "SingleRecord", "environment": {f"K{n}": "v" for n in range(16)}},
         "at most 15 environment entries"),
    ],
)  # fmt: skip
def test_quarantine_needs_lines_in_and_out_untouched_by_a_join(given, problem):
    with pytest.raises(ValidationError, match="bad_records \\(BadRecords\\): 'quarantine'") as e:
        TransformSettings.from_request({**LINES_CSV, "bad_records": "quarantine", **given})
    assert problem in str(e.value)


def test_max_bad_records_applies_with_quarantine_only_and_the_variable_is_refused():
    """A limit without quarantine (a stack default's, under a request for fail) is no
    error and sets nothing aside; the variable set by hand is refused."""
    alone = TransformSettings.from_request({**LINES_CSV, "max_bad_records": 2})
    assert alone.bad_record_allowance is None and alone.job_environment == {}
    with pytest.raises(ValidationError, match="BATCHINFER_MAX_BAD_RECORDS is set by"):
        TransformSettings.from_request(
            {**LINES_CSV, "environment": {"BATCHINFER_MAX_BAD_RECORDS": "2"}}
        )
    with pytest.raises(ValidationError, match=r"max_bad_records \(MaxBadRecords\): -1"):
        TransformSettings.from_request({**LINES_CSV, "max_bad_records": -1})
