"""The state machine definition as synthesized: the data flow, retries, catches and job
naming that issue the spec's S1-S6 and R1 promises, plus asl-validator on every
definition."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from batchinfer.pipeline.contract.layout import MAP_RESULTS_FORMAT
from batchinfer.pipeline.contract.registry import STEPS
from stacks.workflow import FIND_JOB_RETRIES, RETRYABLE_SAGEMAKER_ERRORS

from .conftest import REPO_ROOT
from .definition import all_states, definitions

ASL_VALIDATOR = REPO_ROOT / "node_modules" / ".bin" / "asl-validator"


@pytest.fixture(scope="module")
def definition(synthesized):
    (only,) = definitions(synthesized.template_json).values()
    return only


@pytest.fixture(scope="module")
def states(definition):
    return all_states(definition["States"])


def test_every_definition_passes_asl_validator(synthesized, tmp_path):
    assert ASL_VALIDATOR.exists(), "run `npm ci` (make installs it)"
    for logical_id, definition in definitions(synthesized.template_json).items():
        path = tmp_path / f"{logical_id}.json"
        path.write_text(json.dumps(definition))
        result = subprocess.run(
            [str(ASL_VALIDATOR), "--json-path", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_run_flow_plan_split_collect_job_verify_finalize(definition, states):
    assert definition["StartAt"] == "Plan"
    assert states["Plan"]["Next"] == "SplitInputs"
    assert states["SplitInputs"]["Next"] == "CheckSplits"
    assert states["CheckSplits"]["Next"] == "Collect"
    assert states["Collect"]["Next"] == "AcquireInstances"
    assert states["AcquireInstances"]["Next"] == "InstancesGranted"
    assert states["RunJob"]["Next"] == "ReleaseInstances"
    assert states["ReleaseInstances"]["Next"] == "CountShards"
    assert states["CountShards"]["Next"] == "Verify"
    assert states["Verify"]["Next"] == "AllShardsDone"
    choice = states["AllShardsDone"]
    assert choice["Choices"] == [
        {"Variable": "$.round.complete", "BooleanEquals": True, "Next": "MergeChosen"},
        {
            "And": [
                {"Variable": "$.round.wait_seconds", "IsPresent": True},
                {"Variable": "$.round.wait_seconds", "NumericGreaterThan": 0},
            ],
            "Next": "WaitForCapacity",
        },
    ]
    assert choice["Default"] == "AcquireInstances", "missing shards go to a new job round"
    # After a capacity failure, the new round waits the seconds Verify set.
    assert states["WaitForCapacity"] == {
        "Type": "Wait",
        "SecondsPath": "$.round.wait_seconds",
        "Next": "AcquireInstances",
    }
    merge = states["MergeChosen"]
    assert merge["Choices"] == [
        {"Variable": "$.plan.merge", "BooleanEquals": True, "Next": "MergeOutputs"}
    ]
    assert merge["Default"] == "Finalize"
    # A failed merge is named by CheckMerges (the Map tolerates it), before Finalize.
    assert states["MergeOutputs"]["Next"] == "CheckMerges"
    assert states["CheckMerges"]["Next"] == "Finalize"
    assert states["Finalize"]["Next"] == "Done" and states["Done"]["Type"] == "Succeed"


def test_the_merge_is_one_child_per_input_object_retried_when_it_died(states):
    """The MergeOutputs Map reads Plan's split tasks (one line per input object) and gives each
    MergeObject its object, its shard folder and the plan; a MergeObject that died or timed
    out runs again (R12: each input object gives one output named after it)."""
    merge = states["MergeOutputs"]
    assert merge["ItemReader"]["Parameters"]["Key.$"] == "$.plan.inputs_key"
    assert merge["ItemReader"]["ReaderConfig"]["InputType"] == "JSONL"
    assert merge["ItemSelector"] == {
        "input.$": "$$.Map.Item.Value.input",
        "folder.$": "$$.Map.Item.Value.output",
        "plan.$": "$.plan",
    }
    assert merge["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED"
    assert merge["ResultPath"] == "$.merges"  # its result manifest, which CheckMerges reads
    # A failed merge does not fail the Map (whose failure would name no input on AWS):
    # CheckMerges names it from the result files.
    assert merge["ToleratedFailurePercentage"] == 100
    task = merge["ItemProcessor"]["States"]["MergeObject"]
    retried = {e for r in task["Retry"] for e in r["ErrorEquals"]}
    assert {"Lambda.Unknown", "Sandbox.Timedout", "Runtime.ExitError"} <= retried


def test_timeout_logging_and_tracing(synthesized, definition):
    config = synthesized.stack.config
    assert definition["TimeoutSeconds"] == config.timeout_hours * 3600
    (machine,) = [
        r
        for r in synthesized.template_json["Resources"].values()
        if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    props = machine["Properties"]
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is config.log_execution_data
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["StateMachineType"] == "STANDARD"


def test_job_name_is_made_inside_the_retried_block_R1(states):
    """A Retry re-runs a state with the same input: the SageMaker tasks have none; the
    Retry is on the Parallel whose branch starts with PrepareJob, which names the job."""
    run_job = states["RunJob"]
    assert run_job["Type"] == "Parallel"
    (branch,) = run_job["Branches"]
    assert branch["StartAt"] == "PrepareJob"
    assert "Retry" not in states["TransformJob"]
    assert "Retry" not in states["TransformJobWithDataProcessing"]
    assert "Retry" not in states["ProcessingJob"]
    assert states["PrepareJob"]["ResultPath"] == "$.job"
    for task in ("TransformJob", "TransformJobWithDataProcessing", "ProcessingJob"):
        parameters = states[task]["Parameters"]
        name_key = "ProcessingJobName.$" if task == "ProcessingJob" else "TransformJobName.$"
        assert parameters[name_key].startswith("$.job.request.")


def test_sagemaker_retry_has_backoff_and_jitter_and_skips_validation_errors(synthesized, states):
    retry = synthesized.stack.config.retry
    (rule,) = states["RunJob"]["Retry"]
    assert set(rule["ErrorEquals"]) == set(RETRYABLE_SAGEMAKER_ERRORS)
    assert {
        "SageMaker.ResourceLimitExceededException",
        "BatchInfer.TransientApiError",
    } <= set(rule["ErrorEquals"])
    assert not any("Validation" in e or e.startswith("States.") for e in rule["ErrorEquals"])
    assert rule["JitterStrategy"] == "FULL"
    assert rule["BackoffRate"] == retry.backoff_rate
    assert rule["IntervalSeconds"] == retry.interval_seconds
    assert rule["MaxAttempts"] == retry.max_attempts
    assert rule["MaxDelaySeconds"] == retry.max_delay_seconds


def test_sync_tasks_are_the_s1_integrations(states):
    assert states["TransformJob"]["Resource"].endswith(
        ":states:::sagemaker:createTransformJob.sync"
    )
    assert states["ProcessingJob"]["Resource"].endswith(
        ":states:::sagemaker:createProcessingJob.sync"
    )
    assert "DataProcessing.$" in states["TransformJobWithDataProcessing"]["Parameters"]
    assert "DataProcessing.$" not in states["TransformJob"]["Parameters"]
    choose = states["ChooseJob"]
    assert choose["Choices"][:2] == [
        {"Variable": "$.job.engine", "StringEquals": "endpoint", "Next": "ScoreShards"},
        {"Variable": "$.job.engine", "StringEquals": "processing", "Next": "ProcessingJob"},
    ]
    assert choose["Default"] == "TransformJob"


def test_failed_job_goes_to_verify_and_api_errors_to_the_failure_path(states):
    catches = states["RunJob"]["Catch"]
    assert catches[0] == {
        "ErrorEquals": ["States.TaskFailed"],
        "ResultPath": "$.job",
        "Next": "CheckJobError",
    }
    assert len(catches) == 1, "TaskFailed takes every error a state without a timeout has"
    check = states["CheckJobError"]
    assert check["Choices"] == [
        {
            "Or": [
                {"Variable": "$.job.Error", "StringEquals": "States.TaskFailed"},
                {"Variable": "$.job.Error", "StringEquals": "BatchInfer.AdoptedJobFailed"},
            ],
            "Next": "ReleaseInstances",
        }
    ], "a Failed job (or adopted job) returns its instances, then Verify resubmits its shards"
    assert check["Default"] == "JobApiError"
    assert states["JobApiError"]["Next"] == "RecordFailure"


def test_generic_sagemaker_errors_are_retried_only_when_transient_S3(states):
    """SageMaker.AmazonSageMakerException covers throttling and 5xx but also validation and
    access errors: the branch classifies it by the Cause and fails as one or the other."""
    for job in ("TransformJob", "TransformJobWithDataProcessing", "ProcessingJob"):
        no_response, generic = states[job]["Catch"]
        assert no_response["ErrorEquals"] == ["SageMaker.SdkClientException"]
        assert no_response["Next"] == "FindJob"
        assert generic["ErrorEquals"] == ["SageMaker.AmazonSageMakerException"]
        assert generic["Next"] == "ClassifyApiError"
    classify = states["ClassifyApiError"]
    transient = {c["StringMatches"] for c in classify["Choices"]}
    assert "*Error Code: ThrottlingException*" in transient and "*Status Code: 5*" in transient
    assert {c["Next"] for c in classify["Choices"]} == {"FindJob"}, "the job may exist"
    assert classify["Default"] == "PermanentApiError"
    assert states["TransientApiError"]["Error"] == "BatchInfer.TransientApiError"
    assert states["PermanentApiError"]["Error"] == "BatchInfer.PermanentApiError"
    (retry,) = states["RunJob"]["Retry"]
    assert "BatchInfer.TransientApiError" in retry["ErrorEquals"]
    assert "BatchInfer.PermanentApiError" not in retry["ErrorEquals"]
    assert "SageMaker.AmazonSageMakerException" not in retry["ErrorEquals"]
    assert "SageMaker.SdkClientException" not in retry["ErrorEquals"], "looked for first"


def test_a_job_whose_create_may_have_gone_through_is_found_and_adopted(states, synthesized):
    """After no response or a transient error, the attempt's job is looked for by its name
    (the AWS SDK integration's Describe*Job, retried: a name not found included); not found,
    the branch fails as transient (retried under a new name); found, it is polled until it
    ends and answers as the .sync task would."""
    retry = synthesized.stack.config.retry
    find_job = states["FindJob"]
    assert find_job["Choices"] == [
        {"Variable": "$.job.engine", "StringEquals": "processing", "Next": "FindProcessingJob"}
    ]
    assert find_job["Default"] == "FindTransformJob"
    for kind in ("Transform", "Processing"):
        find = states[f"Find{kind}Job"]
        assert find["Resource"].endswith(f":states:::aws-sdk:sagemaker:describe{kind}Job")
        assert find["Parameters"] == {f"{kind}JobName.$": "$.job.name"}
        (rule,) = find["Retry"]
        assert rule["ErrorEquals"] == ["States.ALL"]
        assert rule["MaxAttempts"] == FIND_JOB_RETRIES
        assert rule["IntervalSeconds"] == retry.interval_seconds
        (not_found,) = find["Catch"]
        assert not_found["ErrorEquals"] == ["SageMaker.ResourceNotFoundException"]
        assert not_found["Next"] == "TransientApiError"
        ended = states[find["Next"]]
        assert [c["Next"] for c in ended["Choices"]] == [
            f"{kind}JobAdopted",
            f"Adopted{kind}JobFailed",
        ]
        assert ended["Default"] == f"WaitFor{kind}Job"
        assert states[f"WaitFor{kind}Job"]["Next"] == f"Find{kind}Job"
        assert states[f"WaitFor{kind}Job"]["Seconds"] == retry.max_delay_seconds
        assert states[f"{kind}JobAdopted"]["Parameters"] == {
            "name.$": "$.adopted.name",
            "status.$": "$.adopted.status",
        }
        failed = states[f"Adopted{kind}JobFailed"]
        assert failed["Error"] == "BatchInfer.AdoptedJobFailed"
        assert failed["CausePath"] == "States.JsonToString($.adopted.described)"


def test_every_lambda_task_retries_throttling_and_service_errors(states):
    lambdas = [n for n, s in states.items() if ":lambda:" in s.get("Resource", "")]
    functions = {json.dumps(states[n]["Resource"]) for n in lambdas}
    assert len(functions) == len(STEPS), "every step of the registry has its tasks"
    # Two steps have a second task: ReleaseSplitInstance on the split item's failure path,
    # CheckSplits after the MergeOutputs Map (CheckMerges).
    assert len(lambdas) == len(STEPS) + 2
    for name in lambdas:
        retried = {e for r in states[name]["Retry"] for e in r["ErrorEquals"]}
        assert {"Lambda.TooManyRequestsException", "Lambda.ServiceException"} <= retried, name


def test_every_task_outside_the_branch_fails_into_record_failure_then_fail(states):
    for name in (
        "Plan",
        "SplitInputs",
        "Collect",
        "AcquireInstances",
        "ReleaseInstances",
        "CountShards",
        "Verify",
        "MergeOutputs",
        "CheckMerges",
        "Finalize",
    ):
        last = states[name]["Catch"][-1]
        assert last["ErrorEquals"] == ["States.ALL"], name
        assert last["Next"] == "RecordFailure", name
        assert last["ResultPath"] == "$.error", name
    record = states["RecordFailure"]
    assert record["Next"] == "RunFailed"
    assert record["Catch"][0]["Next"] == "FailureNotRecorded"
    assert states["RunFailed"] == {
        "Type": "Fail",
        "ErrorPath": "$.failure.error",
        "CausePath": "$.failure.cause",
    }
    assert states["FailureNotRecorded"]["Type"] == "Fail"
    fail_states = {n for n, s in states.items() if s["Type"] == "Fail"}
    assert fail_states == {
        "RunFailed",
        "FailureNotRecorded",
        "DuplicateRun",
        "TransientApiError",
        "PermanentApiError",
        "AdoptedTransformJobFailed",
        "AdoptedProcessingJobFailed",
        # the split job's, inside the split Map's item processor
        "SplitTransientApiError",
        "SplitPermanentApiError",
        "AdoptedSplitJobFailed",
        "SplitFailed",
    }


def test_duplicate_run_fails_without_touching_the_existing_run(states):
    first = states["Plan"]["Catch"][0]
    assert first["ErrorEquals"] == ["RunAlreadyExists"]
    assert first["Next"] == "DuplicateRun"
    assert states["DuplicateRun"]["Type"] == "Fail"


def test_per_shard_data_stays_out_of_the_state(states):
    split = states["SplitInputs"]
    assert split["ItemReader"]["Resource"].endswith(":states:::s3:getObject")
    assert split["ItemReader"]["Parameters"]["Key.$"] == "$.plan.inputs_key"
    assert split["ItemReader"]["ReaderConfig"]["InputType"] == "JSONL"
    assert "ResultWriter" in split
    assert states["RunJob"]["ResultSelector"] == {"name.$": "$[0].name", "status.$": "$[0].status"}
    for task in ("TransformJob", "ProcessingJob"):
        assert set(states[task]["ResultSelector"]) == {"name.$", "status.$"}
    count = states["CountShards"]
    assert count["ItemReader"]["Parameters"]["Key.$"] == "$.round.shards_key"
    score = states["ScoreShards"]["ItemReader"]
    assert score["Parameters"]["Key.$"] == "$.round.shards_key", "the same shard list"
    assert count["ItemReader"]["ReaderConfig"]["InputType"] == "JSONL"
    assert count["ItemSelector"]["shard.$"] == "$$.Map.Item.Value", "one shard per child"
    assert count["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED"
    assert count["ResultWriter"]["Parameters"]["Prefix"] == "runs/_map-results"
    assert count["ResultSelector"] == {"manifest.$": "$.ResultWriterDetails.Key"}
    assert count["ResultPath"] == "$.counts", "the results stay in S3, only their key here"
    for name in ("SplitInputs", "CountShards", "ScoreShards"):
        # A failed item is read from the results and named by the step after the Map: the
        # Map's own failure (States.ExceedToleratedFailureThreshold) would name none.
        assert states[name]["ToleratedFailurePercentage"] == 100, name
        assert states[name]["ResultWriter"]["WriterConfig"] == MAP_RESULTS_FORMAT, name
    assert states["ScoreShards"]["ResultSelector"] == {"manifest.$": "$.ResultWriterDetails.Key"}
    assert states["ScoreShards"]["ResultPath"] == "$.scores"
    assert states["SplitInputs"]["ResultPath"] == "$.splits"


def test_lambda_payloads_reference_only_state_that_exists(states):
    """Every Lambda gets small objects from the state, never a shard list."""
    assert states["Plan"]["Parameters"]["request.$"] == "$"
    assert states["Collect"]["Parameters"]["plan.$"] == "$.plan"
    assert states["PrepareJob"]["Parameters"] == {"plan.$": "$.plan", "round.$": "$.round"}
    verify = states["Verify"]["Parameters"]
    assert {verify["plan.$"], verify["round.$"], verify["job.$"]} == {"$.plan", "$.round", "$.job"}
    assert verify["counts.$"] == "$.counts.manifest"
    assert states["RecordFailure"]["Parameters"]["state.$"] == "$"


def test_asl_validator_is_pinned_in_package_json():
    package = json.loads((REPO_ROOT / "package.json").read_text())
    assert package["devDependencies"]["asl-validator"][0].isdigit()
    assert package["devDependencies"]["aws-cdk"].startswith("2.1148.")
    assert shutil.which("node") is not None
    assert Path(REPO_ROOT / "package-lock.json").exists()


def test_a_run_without_instances_waits_in_a_loop_of_the_configured_interval(synthesized, states):
    """AcquireInstances answers ``$.admission``; a run not granted waits ``poll_seconds``
    and asks again; the bound on the wait is the acquire step's (InstancesUnavailable,
    caught into the failure path)."""
    acquire = states["AcquireInstances"]
    assert acquire["ResultPath"] == "$.admission"
    granted = states["InstancesGranted"]
    assert granted["Choices"] == [
        {"Variable": "$.admission.granted", "BooleanEquals": True, "Next": "RunJob"}
    ]
    assert granted["Default"] == "WaitForInstances"
    wait = states["WaitForInstances"]
    assert wait["Type"] == "Wait" and wait["Next"] == "AcquireInstances"
    assert wait["Seconds"] == synthesized.stack.config.admission.poll_seconds
    release = states["ReleaseInstances"]
    assert release["ResultPath"] is None, "releasing leaves the state as it was"
    assert release["Parameters"] == {"plan.$": "$.plan"}
