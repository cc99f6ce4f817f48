"""Job names (R1: <= 63 characters, the SageMaker pattern, new per attempt, inside the IAM
prefix) and the job requests the state machine's tasks copy field by field."""

import json
from dataclasses import replace

import pytest

from batchinfer.errors import ValidationError
from batchinfer.instances.supported import (
    LOCAL_STORAGE_FAMILIES,
    accepted,
    has_local_storage,
)
from batchinfer.pipeline.contract.data_places import DataPlace
from batchinfer.pipeline.contract.job_names import MAX_BASE_LENGTH, job_base, job_name
from batchinfer.pipeline.contract.limits import MAX_ROUNDS
from batchinfer.pipeline.jobs.job_requests import (
    GIB,
    PROCESSING_FIELDS,
    TRANSFORM_FIELDS,
    check_payload_times_concurrency,
    processing_arguments,
    processing_volume_gb,
)
from batchinfer.pipeline.steps.prepare_job import prepare_job
from batchinfer.transform.settings import TransformSettings, validate_job_name
from tests.support.run_state import example_plan, example_round


@pytest.mark.parametrize(
    "run_id",
    ["exec-1", "a" * 80, "2025-01-01T02:00:00.000Z_nightly", "x.y_z", "-" + "9" * 79],
)
def test_every_attempt_gets_a_valid_new_name_within_63_chars_R1(run_id):
    base = job_base("bi-prod", run_id)
    assert base.startswith("bi-prod-") and len(base) <= MAX_BASE_LENGTH
    names = {job_name(base, MAX_ROUNDS) for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert len(name) <= 63
        validate_job_name(name)


def test_changed_or_shortened_run_ids_keep_distinct_bases():
    assert job_base("bi", "a_b") != job_base("bi", "a.b")
    assert job_base("bi", "x" * 80) != job_base("bi", "x" * 79 + "y")
    assert job_base("bi", "plain-id") == "bi-plain-id"


def test_transform_request_has_every_field_the_task_copies(account):
    round_ = example_round(1, "s3://b/runs/r-1/round-1.manifest")
    job = prepare_job(example_plan(), round_, env=account.env, s3=account.s3).to_state()
    request = job["request"]
    assert set(TRANSFORM_FIELDS) <= set(request) and not job["data_processing"]
    assert request["TransformInput"]["DataSource"] == {
        "S3DataSource": {"S3DataType": "ManifestFile", "S3Uri": round_.manifest}
    }
    assert request["MaxConcurrentTransforms"] == 0, "0: SageMaker asks the container (R10)"
    assert (request["BatchStrategy"], request["MaxPayloadInMB"]) == ("MultiRecord", 6), (
        "our container's answer with no SAGEMAKER_MAX_PAYLOAD_IN_MB in its environment"
    )
    assert request["TransformOutput"]["KmsKeyId"] == account.env.kms_key_arn
    assert request["TransformResources"]["VolumeKmsKeyId"] == account.env.kms_key_arn
    assert request["Tags"] == [{"Key": "batchinfer:run-id", "Value": "r-1"}]


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        ({}, 2),
        ({"max_payload_mb": 1}, 1),
        ({"environment": {"SAGEMAKER_MAX_PAYLOAD_IN_MB": "3"}}, 3),
    ],
    ids=["container-answers", "job-value-wins", "job-environment-over-model-R21"],
)
def test_unset_batch_settings_take_the_containers_answer_R10_E10(account, job, expected):
    """E10: with no job value the container's /execution-parameters MaxPayloadInMB (here 2,
    from the model's Environment) is in force; a job value (1) wins over it."""
    env = replace(account.env, model_environment={"SAGEMAKER_MAX_PAYLOAD_IN_MB": "2"})
    job = prepare_job(
        example_plan(**job), example_round(1, "s3://b/m"), env=env, s3=account.s3
    ).to_state()
    request = job["request"]
    assert request["MaxPayloadInMB"] == expected
    assert request["BatchStrategy"] == "MultiRecord", "the container answers MULTI_RECORD"
    assert request["MaxConcurrentTransforms"] == 0


@pytest.mark.parametrize(
    ("instance_type", "workers", "concurrency"),
    [("ml.g5.12xlarge", "4", 4), ("ml.c5.9xlarge", "36", 8), ("ml.unknown.type", None, 0)],
)
def test_a_job_on_the_pytorch_image_sets_torchserve_for_a_batch_job_R1(
    account, instance_type, workers, concurrency
):
    """AWS's PyTorch image (TorchServe) answers 413 past 6,553,500 bytes, waits 60 s for a
    request and picks its own workers; its job gets limits from MaxPayloadInMB (12 MB), the
    toolkit's timeout from InvocationsTimeoutInSeconds, a worker per GPU (else per vCPU)
    and as many requests in flight within R1 (100 // 12 = 8)."""
    env = replace(account.env, framework_image="pytorch 2.3")
    plan = example_plan(
        max_payload_mb=12, invocations_timeout_seconds=1800, instance_type=instance_type
    )
    request = prepare_job(plan, example_round(1, "s3://b/m"), env=env, s3=account.s3).request
    expected = {
        "SAGEMAKER_MODEL_SERVER_TIMEOUT": "1800",
        "TS_MAX_REQUEST_SIZE": str(12 * 1024 * 1024),
        "TS_MAX_RESPONSE_SIZE": str(24 * 1024 * 1024),
    }
    if workers:
        expected["SAGEMAKER_MODEL_SERVER_WORKERS"] = workers
    assert request["Environment"] == expected
    assert request["MaxConcurrentTransforms"] == concurrency


def test_on_the_pytorch_image_the_models_and_jobs_own_values_win(account):
    env = replace(
        account.env,
        framework_image="pytorch 2.3",
        model_environment={"SAGEMAKER_MODEL_SERVER_WORKERS": "2", "TS_MAX_REQUEST_SIZE": "9"},
    )
    plan = example_plan(environment={"SAGEMAKER_MODEL_SERVER_TIMEOUT": "90"})
    request = prepare_job(plan, example_round(1, "s3://b/m"), env=env, s3=account.s3).request
    assert request["Environment"] == {
        "SAGEMAKER_MODEL_SERVER_TIMEOUT": "90",
        "TS_MAX_RESPONSE_SIZE": str(12 * 1024 * 1024),
    }
    assert request["MaxConcurrentTransforms"] == 2  # the model's workers
    other = replace(account.env, framework_image="sklearn 1.2-1")
    request = prepare_job(plan, example_round(1, "s3://b/m"), env=other, s3=account.s3).request
    assert request["Environment"] == {"SAGEMAKER_MODEL_SERVER_TIMEOUT": "90"}


def test_filters_select_the_task_with_data_processing_R15(account):
    plan = example_plan(input_filter="$[1:]", join_source="Input")
    job = prepare_job(plan, example_round(1, "s3://b/m"), env=account.env, s3=account.s3).to_state()
    assert job["data_processing"] is True
    assert job["request"]["DataProcessing"] == {
        "InputFilter": "$[1:]",
        "OutputFilter": "$",
        "JoinSource": "Input",
    }


def test_processing_request_shards_by_key_with_isolation_P4(account):
    job = prepare_job(
        example_plan("processing", instance_count=3),
        example_round(2, "s3://b/m"),
        env=account.env,
        s3=account.s3,
    ).to_state()
    request = job["request"]
    assert set(PROCESSING_FIELDS) <= set(request)
    data, model = request["ProcessingInputs"]
    assert data["S3Input"]["S3DataDistributionType"] == "ShardedByS3Key"
    assert data["S3Input"]["S3DataType"] == "ManifestFile"
    assert model["S3Input"]["S3Uri"] == account.env.model_data_url
    assert request["NetworkConfig"] == {"EnableNetworkIsolation": True}
    assert request["ProcessingResources"]["ClusterConfig"]["InstanceCount"] == 3
    entry = request["AppSpecification"]
    assert entry["ContainerEntrypoint"] == ["batchinfer", "process"]
    assert json.loads(entry["ContainerArguments"][1])["split_type"] == "Line"
    assert "-r2-" in job["name"]


def test_processing_settings_must_fit_a_container_argument():
    settings = TransformSettings.from_request({"environment": {"K": "v" * 300}})
    with pytest.raises(ValidationError, match="SageMaker allows 256"):
        processing_arguments(settings)


def test_concurrency_times_the_containers_payload_is_checked_before_any_job_R1(account):
    env = replace(account.env, model_environment={"SAGEMAKER_MAX_PAYLOAD_IN_MB": "20"})
    with pytest.raises(ValidationError, match=r"max_concurrent_transforms .* 6 x .* 20"):
        check_payload_times_concurrency(TransformSettings(max_concurrent_transforms=6), env)
    check_payload_times_concurrency(TransformSettings(max_concurrent_transforms=5), env)
    check_payload_times_concurrency(
        TransformSettings(max_concurrent_transforms=6, max_payload_mb=10), env
    )


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_no_volume_key_on_an_instance_type_with_local_storage(account, engine):
    """SageMaker refuses VolumeKmsKeyId for types with an instance store (ml.g5, ml.r5d):
    the job asks for it only on types with an EBS volume; outputs are always encrypted."""

    def request(instance_type: str) -> dict:
        plan = example_plan(engine, instance_type=instance_type)
        return prepare_job(plan, example_round(), env=account.env, s3=account.s3).request

    for instance_type, local in (("ml.g5.xlarge", True), ("ml.m5.xlarge", False)):
        job = request(instance_type)
        if engine == "transform":
            volume = job["TransformResources"].get("VolumeKmsKeyId")
            output = job["TransformOutput"]["KmsKeyId"]
        else:
            volume = job["ProcessingResources"]["ClusterConfig"].get("VolumeKmsKeyId")
            output = job["ProcessingOutputConfig"]["KmsKeyId"]
        assert (volume is None) == local, instance_type
        assert output == account.env.kms_key_arn


def test_local_storage_families_are_types_sagemaker_accepts():
    families = {t.split(".")[1] for e in ("transform", "processing") for t in accepted(e)}
    assert {"g5", "g4dn", "r5d"} <= families & LOCAL_STORAGE_FAMILIES
    assert not has_local_storage("ml.m5.large") and not has_local_storage("ml.p3.2xlarge")


@pytest.mark.parametrize(
    ("input_bytes", "instances", "compression", "expected"),
    [
        (0, 1, "None", 5),  # the room for the model and scratch
        (10 * GIB, 1, "None", 25),  # 10 GB in, about 10 GB out, 5 GB room
        (10 * GIB, 4, "None", 10),  # each instance holds a quarter
        (2 * GIB, 1, "Gzip", 17),  # 2 GB of gzip decompress to about 10 GB of output
        (1000 * GIB, 2, "None", 30),  # at most the stack's processing_volume_gb
    ],
)
def test_the_processing_volume_is_sized_from_the_input(
    input_bytes, instances, compression, expected
):
    settings = TransformSettings.from_request(
        {"instance_count": instances, "compression_type": compression}
    )
    assert processing_volume_gb(input_bytes, settings, largest=30) == expected


def test_processing_jobs_run_in_the_configured_vpc(account):
    env = replace(
        account.env, subnet_ids=("subnet-0a1", "subnet-0a2"), security_group_ids=("sg-0b1",)
    )
    job = prepare_job(example_plan("processing"), example_round(), env=env, s3=account.s3)
    assert job.request["NetworkConfig"] == {
        "EnableNetworkIsolation": True,
        "VpcConfig": {"Subnets": ["subnet-0a1", "subnet-0a2"], "SecurityGroupIds": ["sg-0b1"]},
    }


@pytest.mark.parametrize("engine", ["transform", "processing"])
def test_outputs_take_the_key_of_the_place_they_are_written_to(account, engine):
    """A job writing to an output destination encrypts with that bucket's key (or the
    bucket's default encryption); its volume keeps the stack's key."""
    keyed = DataPlace("reports", "acme-reports", "batch/", "arn:aws:kms:eu-west-1:1:key/r")
    plain = DataPlace("shared", "acme-shared", "", "")
    env = replace(account.env, output_destinations=(keyed, plain))

    def keys(job_output: str) -> tuple[str | None, str | None]:
        plan = replace(example_plan(engine), job_output=job_output)
        job = prepare_job(plan, example_round(), env=env, s3=account.s3).request
        if engine == "transform":
            return job["TransformOutput"].get("KmsKeyId"), job["TransformResources"].get(
                "VolumeKmsKeyId"
            )
        return job["ProcessingOutputConfig"].get("KmsKeyId"), job["ProcessingResources"][
            "ClusterConfig"
        ].get("VolumeKmsKeyId")

    stack_key = env.kms_key_arn
    assert keys("s3://acme-reports/batch/r-1/") == (keyed.kms_key_arn, stack_key)
    assert keys("s3://acme-shared/any/") == (None, stack_key)
    assert keys(f"s3://{account.env.data_bucket}/runs/r-1/parts/") == (stack_key, stack_key)
