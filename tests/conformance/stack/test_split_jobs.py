"""The split jobs in the synthesized stack: the split Map's Choice between the SplitObject
Lambda and a ``batchinfer split`` Processing job (R1 names, RunJob's retries, the failure
path), the jobs' role (the SplitObject step's data grants only) and what the state machine
may do with it."""

import pytest

from batchinfer.pipeline.jobs.split_job import SPLIT_ENTRYPOINT
from stacks.workflow import RETRYABLE_SAGEMAKER_ERRORS

from .conftest import of_type, pipeline_functions, synthesize_prod
from .definition import all_states, definitions


@pytest.fixture(scope="module")
def processor(synthesized):
    (definition,) = definitions(synthesized.template_json).values()
    return all_states(definition["States"])["SplitInputs"]["ItemProcessor"]


def _role_statements(resources, prefix):
    return [
        statement
        for logical_id, resource in of_type(resources, "AWS::IAM::Policy").items()
        if logical_id.startswith(prefix)
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement):
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def test_the_split_map_chooses_the_job_for_items_plan_gave_to_it(processor):
    assert processor["StartAt"] == "ChooseSplitter"
    choose = processor["States"]["ChooseSplitter"]
    assert choose["Choices"] == [
        {"Variable": "$.splitter", "StringEquals": "job", "Next": "AcquireSplitInstance"}
    ]
    assert choose["Default"] == "SplitObject"


def test_a_split_job_leases_its_instance_first_and_returns_it_however_it_ends(
    processor, synthesized
):
    """Its instance comes from the budget the runs' jobs share: AcquireSplitInstance (or
    the WaitForSplitInstance loop) before the job, ReleaseSplitInstance after it, and on
    the failure path before the item fails (a release that fails does not hide the job's
    error)."""
    states = processor["States"]
    granted = states[states["AcquireSplitInstance"]["Next"]]
    assert granted["Choices"] == [
        {"Variable": "$.admission.granted", "BooleanEquals": True, "Next": "SplitJob"}
    ]
    assert granted["Default"] == "WaitForSplitInstance"
    wait = states["WaitForSplitInstance"]
    assert wait["Seconds"] == synthesized.stack.config.admission.poll_seconds
    assert wait["Next"] == "AcquireSplitInstance"
    assert states["SplitJob"]["Next"] == "ReleaseSplitInstance"
    # The job's instance goes back before an object it left whole is copied.
    assert states["ReleaseSplitInstance"]["Next"] == "CopyUnsplit"
    assert states["CopyUnsplit"]["End"] is True
    (catch,) = states["SplitJob"]["Catch"]
    assert catch["Next"] == "ReleaseFailedSplitInstance"
    release_failed = states["ReleaseFailedSplitInstance"]
    assert release_failed["Next"] == "SplitJobFailed"
    assert release_failed["Catch"][0]["Next"] == "SplitJobFailed"
    assert release_failed["Catch"][0]["ResultPath"] == "$.release_error"
    assert release_failed["Resource"] == states["ReleaseSplitInstance"]["Resource"]


def test_the_split_job_is_named_per_attempt_retried_like_run_job_and_fails_naming_the_object(
    processor, synthesized
):
    split_job = processor["States"]["SplitJob"]
    (retry,) = split_job["Retry"]
    assert retry["ErrorEquals"] == RETRYABLE_SAGEMAKER_ERRORS
    branch = split_job["Branches"][0]
    assert branch["StartAt"] == "NameSplitJob", "a retry names the job anew (R1)"
    name = branch["States"]["NameSplitJob"]["Parameters"]["name.$"]
    assert "States.UUID()" in name and "$.job.base" in name
    task = branch["States"]["SplitWithJob"]
    assert task["Resource"].endswith(":states:::sagemaker:createProcessingJob.sync")
    parameters = task["Parameters"]
    assert parameters["ProcessingJobName.$"] == "$.attempt.name"
    assert parameters["AppSpecification"]["ContainerEntrypoint"] == SPLIT_ENTRYPOINT
    assert parameters["AppSpecification"]["ContainerArguments.$"] == "$.job.arguments"
    assert parameters["NetworkConfig"]["EnableNetworkIsolation"] is False, "it calls S3"
    cluster = parameters["ProcessingResources"]["ClusterConfig"]
    assert cluster["InstanceType"] == synthesized.stack.config.split_instance_type
    no_response, generic = task["Catch"]
    assert no_response["ErrorEquals"] == ["SageMaker.SdkClientException"]
    assert no_response["Next"] == "FindSplitJob", "the job may have been created"
    assert generic["Next"] == "ClassifySplitApiError"
    find = branch["States"]["FindSplitJob"]
    assert find["Resource"].endswith(":states:::aws-sdk:sagemaker:describeProcessingJob")
    assert find["Parameters"] == {"ProcessingJobName.$": "$.attempt.name"}
    assert find["Catch"][0]["Next"] == "SplitTransientApiError", "not found: a new name"
    assert branch["States"]["AdoptedSplitJobFailed"]["Error"] == "BatchInfer.AdoptedJobFailed"
    (catch,) = split_job["Catch"]
    assert catch["ErrorEquals"] == ["States.ALL"]
    assert processor["States"][catch["Next"]]["Next"] == "SplitJobFailed"
    cause = processor["States"]["SplitJobFailed"]["Parameters"]["Cause.$"]
    assert "$.input" in cause, "the failure names the object"
    assert processor["States"]["SplitFailed"]["Type"] == "Fail"


def test_the_split_jobs_role_reads_inputs_and_writes_shards_only(synthesized, resources):
    statements = _role_statements(resources, "SplitJobsRole")
    data_bucket = synthesized.stack.pipeline.data_bucket
    logical_bucket = synthesized.stack.get_logical_id(data_bucket.node.default_child)
    s3 = [s for s in statements if any(a.startswith("s3:") for a in _actions(s))]
    writes = [s for s in s3 if "s3:PutObject" in _actions(s)]
    (write,) = writes
    assert _actions(write) == {"s3:PutObject", "s3:AbortMultipartUpload"}
    assert "/shards/*" in str(write["Resource"]) and logical_bucket in str(write["Resource"])
    reads = [s for s in s3 if "s3:GetObject" in _actions(s)]
    assert all(_actions(s) == {"s3:GetObject", "s3:GetObjectVersion"} for s in reads)
    read_places = str([s["Resource"] for s in reads])
    assert "/input/*" in read_places
    for place in synthesized.stack.config.data_sources:
        assert f"{place.bucket}/{place.prefix}*" in read_places, "the configured sources"
    granted = set().union(*map(_actions, statements))
    assert not {a for a in granted if a.startswith(("dynamodb:", "sns:", "sagemaker:"))}
    assert "/output/" not in str([s["Resource"] for s in s3])


def test_the_state_machine_passes_the_split_role_to_sagemaker_only(synthesized, resources):
    statements = _role_statements(resources, "WorkflowStateMachineRoleDefaultPolicy")
    (pass_role,) = [s for s in statements if "iam:PassRole" in _actions(s)]
    roles = str(pass_role["Resource"])
    assert "SplitJobsRole" in roles and "ModelExecutionRole" in roles
    assert pass_role["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }


def test_with_split_jobs_off_there_is_no_split_job_and_no_role(tmp_path):
    plain = synthesize_prod(tmp_path, split_job_threshold="off")
    (definition,) = definitions(plain.template_json).values()
    processor = all_states(definition["States"])["SplitInputs"]["ItemProcessor"]
    assert processor["StartAt"] == "SplitObject"
    assert not [k for k in plain.template_json["Resources"] if k.startswith("SplitJobs")]
    for function in pipeline_functions(plain.template_json):
        assert function["Environment"]["Variables"]["BATCHINFER_SPLIT_JOB_THRESHOLD"] == ""
