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
from stacks.nag import acknowledge
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
# EventBridge's tries to deliver an ended execution's event to the failure recorder (it
# retries throttling and service errors, with backoff) and for how long, before the event
# goes to the dead-letter queue, whose alarm tells of it.
ENDED_RULE_RETRIES = 8
ENDED_RULE_MAX_EVENT_AGE_HOURS = 2


class Triggers(Construct):
    """``schedules`` by name; with an S3 trigger ``arrival_rule``, ``arrivals`` (the queue),
    ``dead_letters`` and ``arrivals_function`` (else None); ``ended_rule`` and
    ``ended_dead_letters``, where the ended executions' events it could not record go."""

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
        self._ended_dead_letters(storage, record_failure)

    def _ended_dead_letters(self, storage: Storage, record_failure: lambda_.IFunction) -> None:
        """Where an ended execution's event goes when the failure recorder could not take
        it, rather than being dropped: EventBridge's failed deliveries (the target's
        dead-letter queue, after its retries) and the recorder's failures (Lambda's on-failure
        destination, after Lambda's retries of the asynchronous invocation; each of its
        actions is safe to run again). The queue is encrypted with the stack's key, which
        EventBridge may use through this account's queues only.
        https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html
        https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html"""
        self.ended_dead_letters = sqs.Queue(
            self,
            "RunEndedDeadLetters",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=storage.key,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        acknowledge(
            self.ended_dead_letters,
            "AwsSolutions-SQS3",
            "This queue is itself a dead-letter queue: the end-of-run rule's target's and the "
            "failure recorder's on-failure destination (cdk-nag knows only the dead-letter "
            "queues that another queue's RedrivePolicy names).",
        )
        stack = Stack.of(self)
        storage.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EventBridgeEndOfRunDeadLetters",
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
                # SQS asks KMS for a queue's data keys with the queue's ARN as context: this
                # account's queues (naming this one would make the key and queue a cycle).
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "kms:EncryptionContext:aws:sqs:arn": stack.format_arn(
                            service="sqs", resource="*"
                        )
                    },
                },
            )
        )
        self.ended_rule.add_target(
            targets.LambdaFunction(
                record_failure,
                dead_letter_queue=self.ended_dead_letters,
                retry_attempts=ENDED_RULE_RETRIES,
                max_event_age=Duration.hours(ENDED_RULE_MAX_EVENT_AGE_HOURS),
            )
        )
        # The recorder's role already uses the stack key (its UseDataKey statement).
        record_failure.add_to_role_policy(
            iam.PolicyStatement(
                sid="KeepFailedEndOfRunEvents",
                actions=["sqs:SendMessage"],
                resources=[self.ended_dead_letters.queue_arn],
            )
        )
        invoke_config = lambda_.CfnEventInvokeConfig(
            self,
            "RecordEndedExecution",
            function_name=record_failure.function_name,
            qualifier="$LATEST",
            maximum_retry_attempts=2,
            maximum_event_age_in_seconds=6 * 3600,
            destination_config=lambda_.CfnEventInvokeConfig.DestinationConfigProperty(
                on_failure=lambda_.CfnEventInvokeConfig.OnFailureProperty(
                    destination=self.ended_dead_letters.queue_arn
                )
            ),
        )
        # Lambda checks that the role may send to the destination when it is configured.
        assert record_failure.role is not None, "the stack's Lambdas have roles of their own"
        invoke_config.node.add_dependency(record_failure.role)

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
