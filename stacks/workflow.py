"""The state machine of one run: Plan, Split, CheckSplits, Collect, Infer (transform or
processing, with retries and missing-shard resubmission), Verify, the merge of a merged run,
Finalize, and the failure path.

Data flow (everything per shard lives in S3 and DynamoDB; the state holds only small
objects): ``$`` is the request; Plan adds ``$.plan``; the SplitInputs Map sets ``$.splits``
to its result manifest, which CheckSplits reads; Collect and Verify set ``$.round``
(``number``, ``manifest``, ``shards_key``, ``complete``); AcquireInstances sets
``$.admission``; each job attempt sets ``$.job`` (``name``, ``status``, or the
``Error``/``Cause`` of a failed job); the CountShards Map checks each shard of the round
(one CountShard a shard, items from ``$.round.shards_key``) and sets ``$.counts`` to its
result manifest, which Verify reads (the ScoreShards Map sets ``$.scores`` for
ScoringOutcome the same way); a merged run's MergeOutputs Map merges each input object's
shard outputs (one MergeObject per line of Plan's split tasks); Finalize sets
``$.result``; every Catch puts ``Error``/``Cause`` in ``$.error`` and leads to
RecordFailure, then RunFailed.

Admission: AcquireInstances leases the job's instances from the stack's budget (or the run
waits in the WaitForInstances loop), ReleaseInstances returns them when the job has ended,
completed or Failed; the failure path returns them when the run fails. A split job leases
its instance the same way (AcquireSplitInstance, the WaitForSplitInstance loop) and returns
it when it has ended, completed or failed (ReleaseSplitInstance, on the item's failure path
too); the failure path returns those the stopped split Map left.

One job name per attempt (R1): the Retry for SageMaker throttling and quota errors sits on
the ``RunJob`` Parallel, so every retry re-runs PrepareJob, which names the job anew. An
error after which the job may exist all the same (no response, a 5xx, a throttled call: the
Create may have gone through, or the ``.sync`` task's own polling failed) is not retried
blindly: the attempt's job is looked for by its name (Describe*Job through the AWS SDK
integration) and, when found, adopted: polled until it ends and then taken as the ``.sync``
task's answer, so no second job is started beside it. Only a job not found is created again
under a new name. A job that ends Failed fails its task with ``States.TaskFailed`` (the
Cause is the Describe*Job response; an adopted one fails with ``BatchInfer.AdoptedJobFailed``
and the same Cause): that goes to CountShards and Verify, which resubmit only the shards
without output; any other error of the job task goes to the failure path. When the job
failed for want of capacity, Verify sets ``$.round.wait_seconds`` and the next round starts
after the WaitForCapacity Wait.
"""

from dataclasses import replace
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from batchinfer.instances.supported import has_local_storage
from batchinfer.pipeline.contract import registry as steps
from batchinfer.pipeline.contract.job_names import RUN_ID_TAG
from batchinfer.pipeline.contract.registry import Step
from batchinfer.pipeline.jobs.split_job import (
    JOB,
    SPLIT_ENTRYPOINT,
    SPLIT_NAME_MARK,
    SPLIT_VOLUME_GB,
)
from batchinfer.pipeline.steps.prepare_job import JOB_TASKS, JobTask
from stacks.config import PipelineConfig
from stacks.functions import Functions
from stacks.log_groups import encrypted_log_group
from stacks.map_io import RunItemReader, RunResultWriter
from stacks.model import Model
from stacks.split_jobs import SplitJobs
from stacks.storage import Storage
from stacks.workflow_access import acknowledge_workflow_access, grant_workflow_access

# Errors of the SageMaker API that a later attempt can get past: quota, throttling and
# service faults. SageMaker models only ResourceLimitExceeded, ResourceInUse and
# ResourceNotFound for Create*Job; every other API error (throttling and 5xx, but also
# ValidationException and AccessDenied) surfaces under the one name
# SageMaker.AmazonSageMakerException, with the SDK's "Error Code: X" in its Cause. A Catch
# inside the job branch reads that Cause and fails the branch as transient or permanent, so
# only the transient ones are retried (docs/errors.md).
GENERIC_SAGEMAKER_ERROR = "SageMaker.AmazonSageMakerException"
TRANSIENT_API_ERROR = "BatchInfer.TransientApiError"
PERMANENT_API_ERROR = "BatchInfer.PermanentApiError"
RETRYABLE_SAGEMAKER_ERRORS = [
    "SageMaker.ResourceLimitExceededException",
    TRANSIENT_API_ERROR,
]
# No response came back from SageMaker: the Create may have gone through.
NO_RESPONSE = "SageMaker.SdkClientException"
# The AWS SDK integration's error for a Describe*Job of a name SageMaker does not hold
# (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html:
# ServiceName.ErrorName in PascalCase, with the Exception suffix).
JOB_NOT_FOUND = "SageMaker.ResourceNotFoundException"
# Lookups again after the first (a fixed number: each attempt of a job that was not created
# writes them into the history, stacks/execution_history.py).
FIND_JOB_RETRIES = 2
# An adopted job that ended Failed or Stopped (its Cause: the Describe*Job response, as a
# .sync task's States.TaskFailed has it).
ADOPTED_JOB_FAILED = "BatchInfer.AdoptedJobFailed"
# Cause patterns (StringMatches) of a generic SageMaker error worth another attempt; the
# job of the attempt is looked for first (the Create may have gone through).
TRANSIENT_API_CAUSES = (
    "*Error Code: ThrottlingException*",
    "*Rate exceeded*",
    "*Status Code: 5*",
    "*Error Code: InternalFailure*",
    "*Error Code: ServiceUnavailable*",
)
LAMBDA_THROTTLED = "Lambda.TooManyRequestsException"
# A function that crashed (out of memory) or timed out: Step Functions' documented name,
# and the error types Lambda reports for a timeout and a runtime that exited.
LAMBDA_DIED = ["Lambda.Unknown", "Sandbox.Timedout", "Runtime.ExitError"]
# Raised by Plan when the run id is taken: the other run must stay untouched.
RUN_ALREADY_EXISTS = "RunAlreadyExists"
JOB_FAILED = "States.TaskFailed"


def _job_task(scope: Construct, task: JobTask) -> sfn.CustomState:
    """A ``.sync`` SageMaker task whose parameters are the request PrepareJob built."""
    return sfn.CustomState(
        scope,
        task.state,
        state_json={
            "Type": "Task",
            "Resource": f"arn:{Stack.of(scope).partition}:states:::sagemaker:{task.action}.sync",
            "Parameters": {f"{name}.$": f"$.job.request.{name}" for name in task.fields},
            "ResultSelector": {
                "name.$": f"$.{task.kind}JobName",
                "status.$": f"$.{task.kind}JobStatus",
            },
        },
    )


ENDPOINT_UNAVAILABLE = "EndpointUnavailable"


def _run_map(
    scope: Construct,
    id: str,
    storage: Storage,
    items_key: str,
    concurrency: int,
    *,
    item_selector: dict[str, Any] | None = None,
    result_selector: dict[str, Any] | None = None,
    result_path: str = sfn.JsonPath.DISCARD,
) -> sfn.DistributedMap:
    """A Distributed Map over a run's JSON Lines item file (the key at ``items_key`` in the
    state, read line by line whatever its size), ``concurrency`` items at once, its results
    written under ``runs/_map-results/``. A failed item does not fail the Map: on AWS that
    failure would carry only ``States.ExceedToleratedFailureThreshold``, not the item's own
    error (https://docs.aws.amazon.com/step-functions/latest/dg/maprun-fail-threshold.html),
    so the Map tolerates every failure and the step after it reads the failed items (with
    their input, error and cause) from the result files and names them."""
    return sfn.DistributedMap(
        scope,
        id,
        item_reader=RunItemReader(
            bucket=storage.data_bucket, key=sfn.JsonPath.string_at(items_key)
        ),
        item_selector=item_selector,
        result_writer_v2=RunResultWriter(bucket=storage.data_bucket),
        max_concurrency=concurrency,
        tolerated_failure_percentage=100,
        map_execution_type=sfn.StateMachineType.STANDARD,
        result_selector=result_selector,
        result_path=result_path,
    )


def _payload(step: Step) -> sfn.TaskInput | None:
    """The event a step's state passes, from the registry's paths."""
    if step.payload is None:
        return None
    return sfn.TaskInput.from_object(
        {
            key: sfn.JsonPath.string_at(path)
            if path.startswith("$$.")
            else sfn.JsonPath.object_at(path)
            for key, path in step.payload.items()
        }
    )


def _transient_api_error(scope: Construct, prefix: str) -> sfn.Fail:
    """Fails the job branch as transient (retried under a new name), with the Cause of the
    API error at ``$.api_error``."""
    return sfn.Fail(
        scope,
        f"{prefix}TransientApiError",
        error=TRANSIENT_API_ERROR,
        cause_path="$.api_error.Cause",
    )


def _api_error_classifier(scope: Construct, prefix: str, transient: sfn.IChainable) -> sfn.Choice:
    """A Choice that reads a generic SageMaker error's Cause at ``$.api_error`` and goes on
    to ``transient`` for a transient one, or fails its branch as permanent."""
    permanent = sfn.Fail(
        scope,
        f"{prefix}PermanentApiError",
        error=PERMANENT_API_ERROR,
        cause_path="$.api_error.Cause",
    )
    classify = sfn.Choice(scope, f"Classify{prefix}ApiError").otherwise(permanent)
    for pattern in TRANSIENT_API_CAUSES:
        classify.when(sfn.Condition.string_matches("$.api_error.Cause", pattern), transient)
    return classify


def _find_job(
    scope: Construct,
    config: PipelineConfig,
    label: str,
    kind: str,
    name_path: str,
    not_created: sfn.IChainable,
) -> sfn.CustomState:
    """``Find<label>``: after an error that leaves it unknown whether the ``kind`` job
    named at ``name_path`` was created, Describe*Job by that name (retried
    :data:`FIND_JOB_RETRIES` times on any error with the job's backoff, a name not found
    included, so a job that takes a moment to appear is found). Not found:
    ``not_created``, so the attempt is retried under a new name. Found: polled every
    ``retry.max_delay_seconds`` until it ends; Completed answers ``{"name",
    "status"}`` as the ``.sync`` task does, Failed or Stopped fails the branch with
    :data:`ADOPTED_JOB_FAILED` and its Describe*Job response as the Cause."""
    stack = Stack.of(scope)
    find = sfn.CustomState(
        scope,
        f"Find{label}",
        state_json={
            "Type": "Task",
            "Resource": f"arn:{stack.partition}:states:::aws-sdk:sagemaker:describe{kind}Job",
            "Parameters": {f"{kind}JobName.$": name_path},
            "ResultSelector": {
                "name.$": f"$.{kind}JobName",
                "status.$": f"$.{kind}JobStatus",
                "described.$": "$",
            },
            "ResultPath": "$.adopted",
        },
    )
    find.add_retry(
        errors=["States.ALL"],
        interval=Duration.seconds(config.retry.interval_seconds),
        backoff_rate=config.retry.backoff_rate,
        max_attempts=FIND_JOB_RETRIES,
        max_delay=Duration.seconds(config.retry.max_delay_seconds),
        jitter_strategy=sfn.JitterType.FULL,
    )
    find.add_catch(not_created, errors=[JOB_NOT_FOUND], result_path="$.lookup")
    wait = sfn.Wait(
        scope,
        f"WaitFor{label}",
        time=sfn.WaitTime.duration(Duration.seconds(config.retry.max_delay_seconds)),
    )
    wait.next(find)
    adopted = sfn.Pass(
        scope,
        f"{label}Adopted",
        parameters={"name.$": "$.adopted.name", "status.$": "$.adopted.status"},
    )
    failed = sfn.Fail(
        scope,
        f"Adopted{label}Failed",
        error=ADOPTED_JOB_FAILED,
        cause_path="States.JsonToString($.adopted.described)",
    )
    find.next(
        sfn.Choice(scope, f"{label}Ended")
        .when(sfn.Condition.string_equals("$.adopted.status", "Completed"), adopted)
        .when(
            sfn.Condition.or_(
                sfn.Condition.string_equals("$.adopted.status", "Failed"),
                sfn.Condition.string_equals("$.adopted.status", "Stopped"),
            ),
            failed,
        )
        .otherwise(wait)
    )
    return find


def _retry_sagemaker_errors(state: sfn.Parallel, config: PipelineConfig) -> None:
    """Retry ``state`` (a Parallel that names its job anew) on quota, throttling and
    service faults."""
    state.add_retry(
        errors=RETRYABLE_SAGEMAKER_ERRORS,
        interval=Duration.seconds(config.retry.interval_seconds),
        backoff_rate=config.retry.backoff_rate,
        max_attempts=config.retry.max_attempts,
        max_delay=Duration.seconds(config.retry.max_delay_seconds),
        jitter_strategy=sfn.JitterType.FULL,
    )


def _split_job(
    scope: Construct,
    config: PipelineConfig,
    storage: Storage,
    model: Model,
    jobs: SplitJobs,
    release_failed: tasks.LambdaInvoke,
) -> sfn.Parallel:
    """The split Map's branch for a large object: a ``batchinfer split`` Processing job
    named anew each attempt (R1), retried like RunJob (and, like it, adopted when its
    Create's answer was lost); when it fails, ``release_failed`` returns its instance and
    the item fails with a Cause that names the object."""
    stack = Stack.of(scope)
    token = "States.ArrayGetItem(States.StringSplit(States.UUID(), '-'), 0)"
    name = sfn.Pass(
        scope,
        "NameSplitJob",
        parameters={"name.$": f"States.Format('{{}}-{SPLIT_NAME_MARK}-{{}}', $.job.base, {token})"},
        result_path="$.attempt",
    )
    cluster: dict[str, Any] = {
        "InstanceCount": 1,
        "InstanceType": config.split_instance_type,
        "VolumeSizeInGB": SPLIT_VOLUME_GB,
    }
    if not has_local_storage(config.split_instance_type):
        cluster["VolumeKmsKeyId"] = storage.key.key_arn
    network: dict[str, Any] = {"EnableNetworkIsolation": False}  # it calls S3 itself
    if config.vpc is not None:
        network["VpcConfig"] = {
            "Subnets": list(config.vpc.subnet_ids),
            "SecurityGroupIds": list(config.vpc.security_group_ids),
        }
    task = sfn.CustomState(
        scope,
        "SplitWithJob",
        state_json={
            "Type": "Task",
            "Resource": f"arn:{stack.partition}:states:::sagemaker:createProcessingJob.sync",
            "Parameters": {
                "ProcessingJobName.$": "$.attempt.name",
                "RoleArn": jobs.role.role_arn,
                "AppSpecification": {
                    "ImageUri": model.image_for(config.split_instance_type),
                    "ContainerEntrypoint": SPLIT_ENTRYPOINT,
                    "ContainerArguments.$": "$.job.arguments",
                },
                "ProcessingResources": {"ClusterConfig": cluster},
                "NetworkConfig": network,
                "StoppingCondition": {
                    "MaxRuntimeInSeconds": config.processing_max_runtime_hours * 3600
                },
                "Tags": [{"Key": RUN_ID_TAG, "Value.$": "$.job.run_id"}],
            },
            "ResultSelector": {
                "name.$": "$.ProcessingJobName",
                "status.$": "$.ProcessingJobStatus",
            },
        },
    )
    find = _find_job(
        scope,
        config,
        "SplitJob",
        "Processing",
        "$.attempt.name",
        _transient_api_error(scope, "Split"),
    )
    task.add_catch(find, errors=[NO_RESPONSE], result_path="$.api_error")
    task.add_catch(
        _api_error_classifier(scope, "Split", find),
        errors=[GENERIC_SAGEMAKER_ERROR],
        result_path="$.api_error",
    )
    split_job = sfn.Parallel(
        scope, "SplitJob", result_selector={"job.$": "$[0]"}, result_path="$.split"
    )
    split_job.branch(name.next(task))
    _retry_sagemaker_errors(split_job, config)
    failed = sfn.Pass(
        scope,
        "SplitJobFailed",
        parameters={
            "Error.$": "$.split_error.Error",
            "Cause.$": "States.Format('{}: its split job failed: {}', $.input, "
            "$.split_error.Cause)",
        },
        result_path="$.split_error",
    ).next(
        sfn.Fail(
            scope,
            "SplitFailed",
            error_path="$.split_error.Error",
            cause_path="$.split_error.Cause",
        )
    )
    # The lease is returned first; failing that, the lease's expiry and the failure path
    # return it, and the item still fails with its own error.
    release_failed.add_catch(failed, errors=["States.ALL"], result_path="$.release_error")
    release_failed.next(failed)
    split_job.add_catch(release_failed, errors=["States.ALL"], result_path="$.split_error")
    return split_job


class Workflow(Construct):
    """``state_machine`` and its log group."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: PipelineConfig,
        storage: Storage,
        model: Model,
        functions: Functions,
        split_jobs: SplitJobs | None = None,
    ) -> None:
        super().__init__(scope, id)
        self._config = config
        self._storage = storage
        self._functions = functions
        self._record_failure = self._failure_path()
        start = self._plan_and_split(model, split_jobs)
        run_job = self._job()
        verify_round = self._count_and_verify()
        acquire, release = self._admission(run_job)
        release.next(verify_round)
        self._job_outcome(run_job, release)
        finalize = self._finalize()
        # A round after a job that failed for want of capacity starts after a wait of the
        # seconds Verify set, doubling each round (retry.capacity_wait_seconds).
        wait_for_capacity = sfn.Wait(
            self, "WaitForCapacity", time=sfn.WaitTime.seconds_path("$.round.wait_seconds")
        )
        wait_for_capacity.next(acquire)
        verify_round.next(
            sfn.Choice(self, "AllShardsDone")
            .when(sfn.Condition.boolean_equals("$.round.complete", True), finalize)
            .when(
                sfn.Condition.and_(
                    sfn.Condition.is_present("$.round.wait_seconds"),
                    sfn.Condition.number_greater_than("$.round.wait_seconds", 0),
                ),
                wait_for_capacity,
            )
            .otherwise(acquire)
        )
        self._state_machine(start.next(acquire), model, split_jobs)

    def _invoke(self, step: Step) -> tasks.LambdaInvoke:
        """The task of a registry step: its function, payload and result paths."""
        task = tasks.LambdaInvoke(
            self,
            step.state,
            lambda_function=self._functions.functions[step.name],
            payload=_payload(step),
            payload_response_only=True,
            result_selector=step.result_selector,
            result_path=sfn.JsonPath.DISCARD
            if step.result_path == steps.DISCARD
            else step.result_path,
        )
        # CDK retries the Lambda service errors; throttling needs a retry of its own.
        task.add_retry(
            errors=[LAMBDA_THROTTLED],
            interval=Duration.seconds(1),
            backoff_rate=2,
            max_attempts=8,
            max_delay=Duration.seconds(60),
            jitter_strategy=sfn.JitterType.FULL,
        )
        return task

    def _on_error(self, state: Any) -> None:
        """Any error of ``state`` goes to the failure path, in ``$.error``."""
        state.add_catch(self._record_failure, errors=["States.ALL"], result_path="$.error")

    def _failure_path(self) -> tasks.LambdaInvoke:
        """RecordFailure, then RunFailed; FailureNotRecorded when recording fails too."""
        run_failed = sfn.Fail(
            self,
            "RunFailed",
            error_path="$.failure.error",
            cause_path="$.failure.cause",
        )
        not_recorded = sfn.Fail(
            self,
            "FailureNotRecorded",
            error="FailureNotRecorded",
            cause="The run failed and recording the failure failed too; see the execution "
            "history and the record_failure Lambda's logs.",
        )
        record_failure = self._invoke(steps.RECORD_FAILURE)
        record_failure.add_catch(not_recorded, errors=["States.ALL"], result_path="$.error")
        record_failure.next(run_failed)
        return record_failure

    def _plan_and_split(self, model: Model, split_jobs: SplitJobs | None) -> sfn.Chain:
        """Plan (a taken run id ends in DuplicateRun), the SplitInputs Map (the Lambda, or a
        split job for large objects when the stack has split jobs), CheckSplits (which names
        the inputs whose split failed), Collect."""
        plan = self._invoke(steps.PLAN)
        plan.add_catch(
            sfn.Fail(
                self,
                "DuplicateRun",
                error_path="$.error.Error",
                cause_path="$.error.Cause",
            ),
            errors=[RUN_ALREADY_EXISTS],
            result_path="$.error",
        )
        self._on_error(plan)

        split_object = self._invoke(steps.SPLIT_OBJECT)
        split_inputs = _run_map(
            self,
            "SplitInputs",
            self._storage,
            "$.plan.inputs_key",
            self._config.split_concurrency,
            result_selector={"manifest": sfn.JsonPath.string_at("$.ResultWriterDetails.Key")},
            result_path="$.splits",
        )
        if split_jobs is None:
            split_inputs.item_processor(split_object)
        else:
            split_inputs.item_processor(
                sfn.Choice(self, "ChooseSplitter")
                .when(
                    sfn.Condition.string_equals("$.splitter", JOB),
                    self._leased_split_job(model, split_jobs),
                )
                .otherwise(split_object)
            )
        self._on_error(split_inputs)

        check_splits = self._invoke(steps.CHECK_SPLITS)
        self._on_error(check_splits)
        collect = self._invoke(steps.COLLECT)
        self._on_error(collect)
        return plan.next(split_inputs).next(check_splits).next(collect)

    def _leased_split_job(self, model: Model, split_jobs: SplitJobs) -> tasks.LambdaInvoke:
        """AcquireSplitInstance (or the WaitForSplitInstance loop), the SplitJob, then
        ReleaseSplitInstance: a split job's instance is leased from the budget the runs'
        jobs draw on and returned when the job ended, completed or failed."""
        acquire = steps.ACQUIRE_SPLIT_INSTANCE
        acquire_split = self._invoke(acquire)
        release_failed = self._invoke(
            replace(steps.RELEASE_SPLIT_INSTANCE, state="ReleaseFailedSplitInstance")
        )
        split_job = _split_job(self, self._config, self._storage, model, split_jobs, release_failed)
        # The instance goes back as soon as the job ended; then an object the job left whole
        # is copied under the shard prefix.
        split_job.next(self._invoke(steps.RELEASE_SPLIT_INSTANCE)).next(
            self._invoke(steps.COPY_UNSPLIT)
        )
        wait = sfn.Wait(
            self,
            "WaitForSplitInstance",
            time=sfn.WaitTime.duration(Duration.seconds(self._config.admission.poll_seconds)),
        )
        wait.next(acquire_split)
        acquire_split.next(
            sfn.Choice(self, "SplitInstanceGranted")
            .when(sfn.Condition.boolean_equals("$.admission.granted", True), split_job)
            .otherwise(wait)
        )
        return acquire_split

    def _job(self) -> sfn.Parallel:
        """RunJob: PrepareJob names and builds the job, ChooseJob runs it as a transform or
        processing job or an endpoint round; after an error that may have left the job
        created, FindJob looks for it and adopts it; the whole is retried on SageMaker's
        transient errors (R1: a new name each attempt)."""
        prepare_job = self._invoke(steps.PREPARE_JOB)
        not_created = _transient_api_error(self, "")
        find = {
            kind: _find_job(self, self._config, f"{kind}Job", kind, "$.job.name", not_created)
            for kind in ("Transform", "Processing")
        }
        find_job = (
            sfn.Choice(self, "FindJob")
            .when(sfn.Condition.string_equals("$.job.engine", "processing"), find["Processing"])
            .otherwise(find["Transform"])
        )
        classify = _api_error_classifier(self, "", find_job)
        jobs = {key: _job_task(self, task) for key, task in JOB_TASKS.items()}
        for job in jobs.values():
            job.add_catch(find_job, errors=[NO_RESPONSE], result_path="$.api_error")
            job.add_catch(classify, errors=[GENERIC_SAGEMAKER_ERROR], result_path="$.api_error")
        score_shards = self._endpoint_round()
        choose_job = (
            sfn.Choice(self, "ChooseJob")
            .when(sfn.Condition.string_equals("$.job.engine", "endpoint"), score_shards)
            .when(
                sfn.Condition.string_equals("$.job.engine", "processing"),
                jobs["processing", False],
            )
            .when(
                sfn.Condition.boolean_equals("$.job.data_processing", True),
                jobs["transform", True],
            )
            .otherwise(jobs["transform", False])
        )
        run_job = sfn.Parallel(
            self,
            "RunJob",
            result_selector={"name.$": "$[0].name", "status.$": "$[0].status"},
            result_path="$.job",
        )
        run_job.branch(prepare_job.next(choose_job))
        _retry_sagemaker_errors(run_job, self._config)
        return run_job

    def _count_and_verify(self) -> sfn.Chain:
        """The CountShards Map (one CountShard per shard of the round, its result manifest in
        ``$.counts``), then Verify, which sets ``$.round``."""
        count_shards = _run_map(
            self,
            "CountShards",
            self._storage,
            "$.round.shards_key",
            self._config.verify_concurrency,
            item_selector={
                "shard": sfn.JsonPath.object_at("$$.Map.Item.Value"),
                "job_output": sfn.JsonPath.string_at("$.plan.job_output"),
                "shards_prefix": sfn.JsonPath.string_at("$.plan.shards_prefix"),
                "settings": sfn.JsonPath.object_at("$.plan.settings"),
            },
            result_selector={"manifest": sfn.JsonPath.string_at("$.ResultWriterDetails.Key")},
            result_path="$.counts",
        )
        count_shard = self._invoke(steps.COUNT_SHARD)
        # One that died (out of memory, out of time) is run again: taking out records set
        # aside, it writes the errors file before the output, so it finds either as it left
        # them (batchinfer.pipeline.storage.set_aside).
        count_shard.add_retry(
            errors=LAMBDA_DIED, interval=Duration.seconds(5), backoff_rate=2, max_attempts=2
        )
        count_shards.item_processor(count_shard)
        self._on_error(count_shards)
        verify = self._invoke(steps.VERIFY)
        self._on_error(verify)
        return count_shards.next(verify)

    def _admission(self, run_job: sfn.Parallel) -> tuple[tasks.LambdaInvoke, tasks.LambdaInvoke]:
        """AcquireInstances and ReleaseInstances: the job's instances are leased before it
        and returned after it; a run the budget has no room for waits in the
        WaitForInstances loop (bounded by the acquire step)."""
        acquire = self._invoke(steps.ACQUIRE_INSTANCES)
        self._on_error(acquire)
        wait = sfn.Wait(
            self,
            "WaitForInstances",
            time=sfn.WaitTime.duration(Duration.seconds(self._config.admission.poll_seconds)),
        )
        acquire.next(
            sfn.Choice(self, "InstancesGranted")
            .when(sfn.Condition.boolean_equals("$.admission.granted", True), run_job)
            .otherwise(wait)
        )
        wait.next(acquire)
        release = self._invoke(steps.RELEASE_INSTANCES)
        self._on_error(release)
        return acquire, release

    def _job_outcome(self, run_job: sfn.Parallel, release: tasks.LambdaInvoke) -> None:
        """After RunJob, its instances are released whether the job completed or Failed (the
        round's counts then tell which shards to resubmit); any other error of the job is
        recorded as the run's failure."""
        job_api_error = sfn.Pass(
            self, "JobApiError", input_path="$.job", result_path="$.error"
        ).next(self._record_failure)
        check_job_error = (
            sfn.Choice(self, "CheckJobError")
            .when(
                sfn.Condition.or_(
                    sfn.Condition.string_equals("$.job.Error", JOB_FAILED),
                    sfn.Condition.string_equals("$.job.Error", ADOPTED_JOB_FAILED),
                ),
                release,
            )
            .otherwise(job_api_error)
        )
        # States.TaskFailed matches every error but States.Timeout (no state here has a
        # timeout): CheckJobError tells a Failed job from an API error.
        run_job.add_catch(check_job_error, errors=[JOB_FAILED], result_path="$.job")
        run_job.next(release)

    def _finalize(self) -> sfn.Choice:
        """A merged run's MergeOutputs Map (one MergeObject per input object, the items from
        Plan's split tasks at ``$.plan.inputs_key``, ``split_concurrency`` at once) and
        CheckMerges, then Finalize, then Done. A MergeObject that died or timed out is run
        again: it writes the same object again."""
        finalize = self._invoke(steps.FINALIZE)
        self._on_error(finalize)
        finalize.next(sfn.Succeed(self, "Done"))
        merge_object = self._invoke(steps.MERGE_OBJECT)
        merge_object.add_retry(
            errors=LAMBDA_DIED, interval=Duration.seconds(5), backoff_rate=2, max_attempts=2
        )
        merge_outputs = _run_map(
            self,
            "MergeOutputs",
            self._storage,
            "$.plan.inputs_key",
            self._config.split_concurrency,
            item_selector={
                "input": sfn.JsonPath.string_at("$$.Map.Item.Value.input"),
                "folder": sfn.JsonPath.string_at("$$.Map.Item.Value.output"),
                "plan": sfn.JsonPath.object_at("$.plan"),
            },
            result_selector={"manifest": sfn.JsonPath.string_at("$.ResultWriterDetails.Key")},
            result_path="$.merges",
        )
        merge_outputs.item_processor(merge_object)
        self._on_error(merge_outputs)
        # The Map tolerates a failed merge: CheckMerges fails the run naming its input.
        check_merges = self._invoke(steps.CHECK_MERGES)
        self._on_error(check_merges)
        merge_outputs.next(check_merges).next(finalize)
        return (
            sfn.Choice(self, "MergeChosen")
            .when(sfn.Condition.boolean_equals("$.plan.merge", True), merge_outputs)
            .otherwise(finalize)
        )

    def _state_machine(
        self, definition: sfn.IChainable, model: Model, split_jobs: SplitJobs | None
    ) -> None:
        """``state_machine`` (Standard, X-Ray, its timeout from the config), ``log_group``
        (every event, under the stack's key; with its data where ``log_execution_data``), and
        the state machine's grants and acknowledgments."""
        config = self._config
        self.log_group = encrypted_log_group(
            self,
            "Logs",
            key=self._storage.key,
            retention_days=config.log_retention_days,
            name=f"/aws/vendedlogs/states/{config.stack_name}-runs",
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment=f"batchinfer {config.name}: one batch inference run per execution",
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            state_machine_type=sfn.StateMachineType.STANDARD,
            timeout=Duration.hours(config.timeout_hours),
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=self.log_group,
                level=sfn.LogLevel.ALL,
                include_execution_data=config.log_execution_data,
            ),
        )
        grant_workflow_access(
            self.state_machine,
            config=config,
            storage=self._storage,
            job_roles=[model.role, *([split_jobs.role] if split_jobs else [])],
        )
        acknowledge_workflow_access(
            self.state_machine, config=config, storage=self._storage, functions=self._functions
        )

    def _endpoint_round(self) -> sfn.IChainable:
        """The endpoint engine's round, where a job would run: a Distributed Map over the
        round's shard list (``$.round.shards_key``), each shard scored by ScoreShard, invoked
        again while it answers ``continue``, at most ``endpoint_concurrency`` at once; then
        ScoringOutcome (given the Map's result manifest, ``$.scores``) sets ``$.job`` as a job
        task would. An endpoint still throttled or failing after one invocation's retries is
        retried here, as is an invocation that died; one still unavailable after these
        retries leaves its shard without output for the next round; a refused record fails
        the round through ScoringOutcome, which names it."""
        config = self._config
        score = self._invoke(steps.SCORE_SHARD)
        score.add_retry(
            errors=[ENDPOINT_UNAVAILABLE],
            interval=Duration.seconds(config.retry.interval_seconds),
            backoff_rate=config.retry.backoff_rate,
            max_attempts=config.retry.max_attempts,
            max_delay=Duration.seconds(config.retry.max_delay_seconds),
            jitter_strategy=sfn.JitterType.FULL,
        )
        # An invocation that died goes on from its last saved progress (or completes its
        # output again): once more, since a crash that repeats is not worth more.
        score.add_retry(
            errors=LAMBDA_DIED, interval=Duration.seconds(5), backoff_rate=2, max_attempts=1
        )
        shard_done = sfn.Succeed(self, "ShardScored")
        score.next(
            sfn.Choice(self, "ShardContinues")
            .when(sfn.Condition.string_equals("$.scored.status", "continue"), score)
            .otherwise(shard_done)
        )
        score_shards = _run_map(
            self,
            "ScoreShards",
            self._storage,
            "$.round.shards_key",
            config.endpoint_concurrency,
            item_selector={
                "shard": sfn.JsonPath.object_at("$$.Map.Item.Value"),
                "plan": sfn.JsonPath.object_at("$.plan"),
                "job": sfn.JsonPath.string_at("$.job.name"),
            },
            result_selector={"manifest": sfn.JsonPath.string_at("$.ResultWriterDetails.Key")},
            result_path="$.scores",
        )
        score_shards.item_processor(score)
        return score_shards.next(self._invoke(steps.SCORING_OUTCOME))
