"""The state machine of one run: Plan, Split, Collect, Infer (transform or processing, with
retries and missing-shard resubmission), Verify, Finalize, and the failure path.

Data flow (everything per shard lives in S3 and DynamoDB; the state holds only small
objects): ``$`` is the request; Plan adds ``$.plan``; Collect and Verify set ``$.round``
(``number``, ``manifest``, ``complete``); each job attempt sets ``$.job`` (``name``,
``status``, or the ``Error``/``Cause`` of a failed job); Finalize sets ``$.result``; every
Catch puts ``Error``/``Cause`` in ``$.error`` and leads to RecordFailure, then RunFailed.

One job name per attempt (R1): the Retry for SageMaker throttling and quota errors sits on
the ``RunJob`` Parallel, so every retry re-runs PrepareJob, which names the job anew. A job
that ends Failed fails its task with ``States.TaskFailed`` (the Cause is the Describe*Job
response): that goes to Verify, which resubmits only the shards without output; any other
error of the job task goes to the failure path.
"""

from typing import Any

from aws_cdk import Aws, Duration, Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from batchinfer.pipeline.layout import MAP_RESULTS_PREFIX
from stacks.config import PipelineConfig
from stacks.functions import Functions, retention
from stacks.model import Model
from stacks.nag import acknowledge, resource_finding
from stacks.storage import Storage

# Errors of the SageMaker API that a later attempt (with a new job name) can get past.
RETRYABLE_SAGEMAKER_ERRORS = [
    "SageMaker.ResourceLimitExceededException",
    "SageMaker.AmazonSageMakerException",
    "SageMaker.ThrottlingException",
    "ThrottlingException",
]
# Raised by Plan when the run id is taken: the other run must stay untouched.
RUN_ALREADY_EXISTS = "RunAlreadyExists"
JOB_FAILED = "States.TaskFailed"

_TRANSFORM_FIELDS = (
    "TransformJobName",
    "ModelName",
    "TransformInput",
    "TransformOutput",
    "TransformResources",
    "BatchStrategy",
    "MaxPayloadInMB",
    "MaxConcurrentTransforms",
    "ModelClientConfig",
    "Environment",
    "Tags",
)
_PROCESSING_FIELDS = (
    "ProcessingJobName",
    "RoleArn",
    "AppSpecification",
    "ProcessingInputs",
    "ProcessingOutputConfig",
    "ProcessingResources",
    "NetworkConfig",
    "StoppingCondition",
    "Environment",
    "Tags",
)


def _job_task(
    scope: Construct, id: str, action: str, fields: tuple[str, ...], kind: str
) -> sfn.CustomState:
    """A ``.sync`` SageMaker task whose parameters are the request PrepareJob built."""
    return sfn.CustomState(
        scope,
        id,
        state_json={
            "Type": "Task",
            "Resource": f"arn:{Stack.of(scope).partition}:states:::sagemaker:{action}.sync",
            "Parameters": {f"{name}.$": f"$.job.request.{name}" for name in fields},
            "ResultSelector": {
                "name.$": f"$.{kind}JobName",
                "status.$": f"$.{kind}JobStatus",
            },
        },
    )


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
    ) -> None:
        super().__init__(scope, id)
        fns = functions.functions

        def invoke(name: str, state_id: str, payload: dict[str, Any], result_path: str | None):
            return tasks.LambdaInvoke(
                self,
                state_id,
                lambda_function=fns[name],
                payload=sfn.TaskInput.from_object(payload),
                payload_response_only=True,
                result_path=result_path,
            )

        execution = {
            "execution": sfn.JsonPath.execution_id,
            "execution_name": sfn.JsonPath.execution_name,
        }

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
        record_failure = invoke(
            "record_failure",
            "RecordFailure",
            {"state": sfn.JsonPath.object_at("$"), **execution},
            "$.failure",
        )
        record_failure.add_catch(not_recorded, errors=["States.ALL"], result_path="$.error")
        record_failure.next(run_failed)

        def on_error(state: Any) -> None:
            state.add_catch(record_failure, errors=["States.ALL"], result_path="$.error")

        plan = invoke(
            "plan",
            "Plan",
            {
                "request": sfn.JsonPath.object_at("$"),
                "started_at": sfn.JsonPath.execution_start_time,
                **execution,
            },
            "$.plan",
        )
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
        on_error(plan)

        split_object = tasks.LambdaInvoke(
            self,
            "SplitObject",
            lambda_function=fns["split_object"],
            payload_response_only=True,
        )
        split_inputs = sfn.DistributedMap(
            self,
            "SplitInputs",
            item_reader=sfn.S3JsonItemReader(
                bucket=storage.data_bucket, key=sfn.JsonPath.string_at("$.plan.inputs_key")
            ),
            result_writer_v2=sfn.ResultWriterV2(
                bucket=storage.data_bucket, prefix=MAP_RESULTS_PREFIX.rstrip("/")
            ),
            max_concurrency=config.split_concurrency,
            tolerated_failure_percentage=0,
            map_execution_type=sfn.StateMachineType.STANDARD,
            result_path=sfn.JsonPath.DISCARD,
        )
        split_inputs.item_processor(split_object)
        on_error(split_inputs)

        collect = invoke(
            "collect", "Collect", {"plan": sfn.JsonPath.object_at("$.plan"), **execution}, "$.round"
        )
        on_error(collect)

        prepare_job = invoke(
            "prepare_job",
            "PrepareJob",
            {
                "plan": sfn.JsonPath.object_at("$.plan"),
                "round": sfn.JsonPath.object_at("$.round"),
            },
            "$.job",
        )
        transform_job = _job_task(
            self, "TransformJob", "createTransformJob", _TRANSFORM_FIELDS, "Transform"
        )
        transform_job_dp = _job_task(
            self,
            "TransformJobWithDataProcessing",
            "createTransformJob",
            (*_TRANSFORM_FIELDS, "DataProcessing"),
            "Transform",
        )
        processing_job = _job_task(
            self, "ProcessingJob", "createProcessingJob", _PROCESSING_FIELDS, "Processing"
        )
        choose_job = (
            sfn.Choice(self, "ChooseJob")
            .when(sfn.Condition.string_equals("$.job.engine", "processing"), processing_job)
            .when(sfn.Condition.boolean_equals("$.job.data_processing", True), transform_job_dp)
            .otherwise(transform_job)
        )
        run_job = sfn.Parallel(
            self,
            "RunJob",
            result_selector={"name.$": "$[0].name", "status.$": "$[0].status"},
            result_path="$.job",
        )
        run_job.branch(prepare_job.next(choose_job))
        run_job.add_retry(
            errors=RETRYABLE_SAGEMAKER_ERRORS,
            interval=Duration.seconds(config.retry.interval_seconds),
            backoff_rate=config.retry.backoff_rate,
            max_attempts=config.retry.max_attempts,
            max_delay=Duration.seconds(config.retry.max_delay_seconds),
            jitter_strategy=sfn.JitterType.FULL,
        )

        verify = invoke(
            "verify",
            "Verify",
            {
                "plan": sfn.JsonPath.object_at("$.plan"),
                "round": sfn.JsonPath.object_at("$.round"),
                "job": sfn.JsonPath.object_at("$.job"),
                **execution,
            },
            "$.round",
        )
        on_error(verify)
        job_api_error = sfn.Pass(
            self, "JobApiError", input_path="$.job", result_path="$.error"
        ).next(record_failure)
        check_job_error = (
            sfn.Choice(self, "CheckJobError")
            .when(sfn.Condition.string_equals("$.job.Error", JOB_FAILED), verify)
            .otherwise(job_api_error)
        )
        # States.TaskFailed matches every error but States.Timeout: CheckJobError tells a
        # Failed job from an API error.
        run_job.add_catch(check_job_error, errors=[JOB_FAILED], result_path="$.job")
        on_error(run_job)

        finalize = invoke(
            "finalize",
            "Finalize",
            {"plan": sfn.JsonPath.object_at("$.plan"), **execution},
            "$.result",
        )
        on_error(finalize)
        finalize.next(sfn.Succeed(self, "Done"))

        all_done = (
            sfn.Choice(self, "AllShardsDone")
            .when(sfn.Condition.boolean_equals("$.round.complete", True), finalize)
            .otherwise(run_job)
        )
        run_job.next(verify)
        verify.next(all_done)

        definition = plan.next(split_inputs).next(collect).next(run_job)

        self.log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=f"/aws/vendedlogs/states/{config.stack_name}-runs",
            retention=retention(config.log_retention_days),
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
                destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=True
            ),
        )
        self._grant_sagemaker(config, storage, model)
        storage.key.grant_encrypt_decrypt(self.state_machine)
        self._acknowledge(storage, functions)

    def _grant_sagemaker(self, config: PipelineConfig, storage: Storage, model: Model) -> None:
        """The IAM of the .sync SageMaker integrations (spec S4, S5), written out by hand."""
        stack = Stack.of(self)
        role = self.state_machine.role

        def job_arn(kind: str) -> str:
            return stack.format_arn(
                service="sagemaker", resource=f"{kind}-job", resource_name=f"{config.job_prefix}-*"
            )

        def rule_arn(kind: str) -> str:
            return stack.format_arn(
                service="events",
                resource="rule",
                resource_name=f"StepFunctionsGetEventsForSageMaker{kind}JobsRule",
            )

        jobs = [job_arn("transform"), job_arn("processing")]
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="RunJobs",
                actions=[
                    "sagemaker:CreateTransformJob",
                    "sagemaker:DescribeTransformJob",
                    "sagemaker:StopTransformJob",
                    "sagemaker:CreateProcessingJob",
                    "sagemaker:DescribeProcessingJob",
                    "sagemaker:StopProcessingJob",
                    "sagemaker:AddTags",
                ],
                resources=jobs,
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(sid="ListJobTags", actions=["sagemaker:ListTags"], resources=["*"])
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="PassJobRole",
                actions=["iam:PassRole"],
                resources=[model.role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="SyncJobEvents",
                actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"],
                resources=[rule_arn("Transform"), rule_arn("Processing")],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="EncryptJobVolumesAndOutputs",
                actions=["kms:CreateGrant", "kms:DescribeKey"],
                resources=[storage.key.key_arn],
                conditions={"Bool": {"kms:GrantIsForAWSResource": "true"}},
            )
        )
        self.job_arns = jobs

    def _acknowledge(self, storage: Storage, functions: Functions) -> None:
        """The wildcards of the state machine's role, finding by finding."""
        machine = self.state_machine
        acknowledge(
            machine,
            "AwsSolutions-IAM5",
            "Job names are made per attempt (<prefix>-<run>-r<round>-<token>), so jobs are "
            "allowed by the stack's job-name prefix; sagemaker:ListTags and the X-Ray trace "
            "calls have no resource scope; the Lambdas are invoked with any version "
            "qualifier; the split Map reads its run's input list and writes its results in "
            "the data bucket and starts only its own child executions; the key is used "
            "through S3.",
            findings=[
                *(resource_finding(machine, arn) for arn in self.job_arns),
                "Resource::*",
                "Action::kms:GenerateDataKey*",
                "Action::kms:ReEncrypt*",
                resource_finding(
                    machine, f"arn:{Aws.PARTITION}:s3:::{storage.data_bucket.bucket_name}/*"
                ),
                *(
                    resource_finding(machine, f"{fn.function_arn}:*")
                    for fn in functions.functions.values()
                ),
                *(resource_finding(machine, arn) for arn in self._map_execution_arns()),
            ],
        )

    def _map_execution_arns(self) -> list[str]:
        """The child-execution ARNs CDK's DistributedMapPolicy grants on."""
        stack = Stack.of(self)
        name = Fn.select(6, Fn.split(":", self.state_machine.state_machine_arn))
        base = f"arn:{stack.partition}:states:{stack.region}:{stack.account}:execution:{name}"
        return [f"{base}:*", f"{base}/*:*"]
