"""Ways a run starts besides a console or CLI start: EventBridge Scheduler schedules with a
fixed input, and an optional S3 trigger (arrivals -> SQS -> the arrivals Lambda, which starts
one run per folder per batching window); plus the rule that records runs that timed out or
were aborted (no Catch runs then)."""

from dataclasses import replace

from aws_cdk import Duration, Stack, TimeZone
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from batchinfer.pipeline.steps.arrivals import Trigger
from stacks.config import PipelineConfig
from stacks.config.trigger import S3TriggerConfig
from stacks.data_access import grant_list
from stacks.functions import Functions, lambda_function
from stacks.status_table import StatusTable
from stacks.storage import Storage

EXECUTION_STATUS_CHANGE = "Step Functions Execution Status Change"
# The arrivals Lambda reads its batch, claims its objects and calls StartExecution once per
# folder, several at a time; it stops starting runs 20 s before this (arrivals.TIME_LEFT_MS).
ARRIVALS_TIMEOUT_SECONDS = 120
ARRIVALS_MEMORY_MB = 256
# SQS's largest batch for an event source mapping with a batching window.
ARRIVALS_BATCH_SIZE = 10_000
# Receives of a message before SQS moves it to the dead-letter queue.
ARRIVALS_MAX_RECEIVES = 5


class Triggers(Construct):
    """``schedules`` by name; with an S3 trigger ``arrival_rule``, ``arrivals`` (the queue),
    ``dead_letters`` and ``arrivals_function`` (else None); ``ended_rule``."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: PipelineConfig,
        storage: Storage,
        status: StatusTable,
        state_machine: sfn.StateMachine,
        functions: Functions,
        record_failure: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, id)
        self.schedules: dict[str, scheduler.Schedule] = {}
        data_bucket = storage.data_bucket.bucket_name
        if config.schedules:
            group = scheduler.ScheduleGroup(self, "Schedules")
            for number, item in enumerate(config.schedules):
                request = config.resolve_request(
                    item.input, data_bucket, f"schedules[{number}].input"
                )
                self.schedules[item.name] = scheduler.Schedule(
                    self,
                    f"Schedule-{item.name}",
                    schedule=_expression(item.expression, item.timezone),
                    schedule_group=group,
                    description=f"batchinfer {config.name}: scheduled run {item.name}",
                    enabled=item.enabled,
                    target=scheduler_targets.StepFunctionsStartExecution(
                        state_machine,
                        input=scheduler.ScheduleTargetInput.from_object(request),
                    ),
                )
        self.arrival_rule: events.Rule | None = None
        self.arrivals: sqs.Queue | None = None
        self.dead_letters: sqs.Queue | None = None
        self.arrivals_function: lambda_.Function | None = None
        if config.s3_trigger is not None:
            self._arrivals(config, config.s3_trigger, storage, status, state_machine, functions)
        self.ended_rule = events.Rule(
            self,
            "RunEndedWithoutCatch",
            description="Close runs whose execution ended without the failure path",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=[EXECUTION_STATUS_CHANGE],
                detail={
                    "stateMachineArn": [state_machine.state_machine_arn],
                    "status": ["FAILED", "TIMED_OUT", "ABORTED"],
                },
            ),
        )
        self.ended_rule.add_target(targets.LambdaFunction(record_failure, retry_attempts=8))

    def _arrivals(
        self,
        config: PipelineConfig,
        trigger: S3TriggerConfig,
        storage: Storage,
        status: StatusTable,
        state_machine: sfn.StateMachine,
        functions: Functions,
    ) -> None:
        """The S3 trigger: the rule puts each arrival on a queue (SQS-managed encryption,
        TLS only, a dead-letter queue); the queue's event source mapping gives the arrivals
        Lambda each batching window's messages at once."""
        data_bucket = storage.data_bucket.bucket_name
        (source,) = (p for p in config.input_places(data_bucket) if p.name == trigger.source)
        bucket = source.bucket
        self.dead_letters = sqs.Queue(
            self,
            "ArrivalsDeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        window = trigger.batch_window_seconds
        self.arrivals = sqs.Queue(
            self,
            "Arrivals",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # AWS's advice for a Lambda event source: six times the function's timeout,
            # plus the batching window.
            visibility_timeout=Duration.seconds(6 * ARRIVALS_TIMEOUT_SECONDS + window),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letters, max_receive_count=ARRIVALS_MAX_RECEIVES
            ),
        )
        self.arrival_rule = events.Rule(
            self,
            "Arrival",
            description=f"Queue each object created under {trigger.prefix} for a run",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={
                    "bucket": {"name": [bucket]},
                    "object": {"key": [{"prefix": trigger.prefix}]},
                },
            ),
        )
        self.arrival_rule.add_target(targets.SqsQueue(self.arrivals))
        request = config.resolve_request(trigger.request, data_bucket, "s3_trigger.request")
        variables = Trigger(
            bucket=bucket,
            prefix=trigger.prefix,
            request=request,
            state_machine_arn=state_machine.state_machine_arn,
            table_name=status.table.table_name,
        ).to_variables(Stack.of(self).to_json_string(request))
        function, role, _ = lambda_function(
            self,
            "ArrivalsFunction",
            code=functions.code,
            handler="arrivals.handler",
            memory_mb=ARRIVALS_MEMORY_MB,
            timeout_seconds=ARRIVALS_TIMEOUT_SECONDS,
            description="Start one run per folder of a batch of S3 arrivals",
            environment=variables,
            config=config,
            key=storage.key,
        )
        state_machine.grant_start_execution(role)
        # Whether an event's key names an object as sent or URL-decoded (arrivals.resolve_key).
        grant_list(role, [replace(source, prefix=trigger.prefix)], "ListArrivals")
        # Which run took each arrival (arrival_claims): read, claimed and released by updates.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ClaimArrivals",
                actions=["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:UpdateItem"],
                resources=[status.table.table_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="UseTableKey",
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=[storage.key.key_arn],
            )
        )
        function.add_event_source(
            event_sources.SqsEventSource(
                self.arrivals,
                batch_size=ARRIVALS_BATCH_SIZE,
                max_batching_window=Duration.seconds(window),
                report_batch_item_failures=True,
                # The fewest pollers the service allows: fewer batches per window.
                max_concurrency=2,
            )
        )
        self.arrivals_function = function


def _expression(expression: str, timezone: str) -> scheduler.ScheduleExpression:
    if expression.startswith("rate("):
        return scheduler.ScheduleExpression.expression(expression)
    return scheduler.ScheduleExpression.expression(expression, TimeZone.of(timezone))
