"""Operations: the notification topic, the run-finished event bus, alarms and a dashboard."""

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.config import PipelineConfig
from stacks.storage import Storage


class Notifications(Construct):
    """``topic`` (KMS, TLS-only) for failures and completions and ``bus``, where the
    "Batch Inference Run Finished" events go for other teams."""

    def __init__(
        self, scope: Construct, id: str, *, config: PipelineConfig, storage: Storage
    ) -> None:
        super().__init__(scope, id)
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=f"batchinfer {config.name} runs",
            master_key=storage.key,
            enforce_ssl=True,
        )
        for email in config.notification_emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        # CloudWatch alarms publish to the encrypted topic: this account's alarms only (the
        # service acts for any account that names the topic, hence aws:SourceAccount/SourceArn).
        stack = Stack.of(self)
        storage.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisAccount",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                },
            )
        )
        self.bus = events.EventBus(
            self, "Bus", description=f"batchinfer {config.name}: run-finished events"
        )


class Alarms(Construct):
    """Alarms on failed, timed-out and aborted executions, on Lambda errors, on ended
    executions the end-of-run rule could not record and on arrivals in the S3 trigger's
    dead-letter queue, sent to the topic, and a dashboard of runs and Lambdas."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: PipelineConfig,
        state_machine: sfn.StateMachine,
        functions: dict[str, lambda_.Function],
        topic: sns.ITopic,
        ended_dead_letters: sqs.IQueue,
        dead_letters: sqs.IQueue | None = None,
    ) -> None:
        super().__init__(scope, id)
        action = cw_actions.SnsAction(topic)
        period = Duration.minutes(5)
        run_metrics = {
            "ExecutionsFailed": state_machine.metric_failed(period=period),
            "ExecutionsTimedOut": state_machine.metric_timed_out(period=period),
            "ExecutionsAborted": state_machine.metric_aborted(period=period),
        }
        self.alarms: list[cloudwatch.Alarm] = []
        for name, metric in run_metrics.items():
            self._alarm(name, metric, f"A batchinfer {config.name} run ended {name[10:]}", action)
        for name, function in functions.items():
            self._alarm(
                f"{name.title().replace('_', '')}Errors",
                function.metric_errors(period=period),
                f"The {name} Lambda of batchinfer {config.name} raised errors",
                action,
            )
        self._alarm(
            "RunEndedDeadLetters",
            ended_dead_letters.metric_approximate_number_of_messages_visible(period=period),
            f"Ended executions of batchinfer {config.name} whose run the end-of-run rule did not "
            "close (dead-letter queue): the run may still show RUNNING and hold its instances",
            action,
            statistic="Maximum",
        )
        if dead_letters is not None:
            self._alarm(
                "ArrivalsDeadLetters",
                dead_letters.metric_approximate_number_of_messages_visible(period=period),
                f"S3 arrivals of batchinfer {config.name} that started no run (dead-letter queue)",
                action,
                statistic="Maximum",
            )
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"{Stack.of(self).stack_name}-runs",
            default_interval=Duration.days(7),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Runs",
                left=[
                    state_machine.metric_started(period=period),
                    state_machine.metric_succeeded(period=period),
                    *run_metrics.values(),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Run duration",
                left=[state_machine.metric_time(period=period, statistic="p90")],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Lambda errors",
                left=[f.metric_errors(period=period) for f in functions.values()],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Lambda duration (p90)",
                left=[
                    f.metric_duration(period=period, statistic="p90") for f in functions.values()
                ],
                width=12,
            ),
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=24),
        )

    def _alarm(
        self,
        id: str,
        metric: cloudwatch.Metric,
        description: str,
        action: cw_actions.SnsAction,
        statistic: str = "Sum",
    ) -> None:
        alarm = cloudwatch.Alarm(
            self,
            id,
            metric=metric.with_(statistic=statistic),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(action)
        self.alarms.append(alarm)
