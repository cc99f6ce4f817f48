"""Ways a run starts besides a console or CLI start: EventBridge Scheduler schedules with a
fixed input, and an optional S3-arrival rule; plus the rule that records runs that timed
out or were aborted (no Catch runs then)."""

from aws_cdk import TimeZone
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.config import PipelineConfig
from stacks.storage import Storage

EXECUTION_STATUS_CHANGE = "Step Functions Execution Status Change"


class Triggers(Construct):
    """``schedules`` by name, ``arrival_rule`` (or None) and ``ended_rule``."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: PipelineConfig,
        storage: Storage,
        state_machine: sfn.StateMachine,
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
        self.arrival_rule = None
        if config.s3_trigger is not None:
            trigger = config.s3_trigger
            (source,) = (p for p in config.input_places(data_bucket) if p.name == trigger.source)
            bucket = source.bucket
            self.arrival_rule = events.Rule(
                self,
                "Arrival",
                description=f"Start a run for each object created under {trigger.prefix}",
                event_pattern=events.EventPattern(
                    source=["aws.s3"],
                    detail_type=["Object Created"],
                    detail={
                        "bucket": {"name": [bucket]},
                        "object": {"key": [{"prefix": trigger.prefix}]},
                    },
                ),
            )
            key = events.EventField.from_path("$.detail.object.key")
            self.arrival_rule.add_target(
                targets.SfnStateMachine(
                    state_machine,
                    input=events.RuleTargetInput.from_object(
                        config.resolve_request(trigger.request, data_bucket, "s3_trigger.request")
                        | {"input": f"s3://{bucket}/{key}"}
                    ),
                )
            )
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


def _expression(expression: str, timezone: str) -> scheduler.ScheduleExpression:
    if expression.startswith("rate("):
        return scheduler.ScheduleExpression.expression(expression)
    return scheduler.ScheduleExpression.expression(expression, TimeZone.of(timezone))
