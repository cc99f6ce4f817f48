"""Every resource of the stack and its security settings, read from the template."""

import json

from aws_cdk.assertions import Match

from batchinfer.pipeline.contract import stack_outputs
from batchinfer.pipeline.contract.layout import SHARDS_PREFIX
from batchinfer.pipeline.contract.registry import STEPS
from batchinfer.pipeline.steps import arrivals
from tests.support.offline.template import render

from .conftest import ACCOUNT, REGION, of_type


def test_kms_key_rotates(synthesized):
    synthesized.template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_data_bucket_is_kms_encrypted_private_versioned_and_logged(synthesized, resources):
    synthesized.template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    Match.object_like(
                        {
                            "ServerSideEncryptionByDefault": {
                                "SSEAlgorithm": "aws:kms",
                                "KMSMasterKeyID": Match.any_value(),
                            }
                        }
                    )
                ]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "VersioningConfiguration": {"Status": "Enabled"},
            "LoggingConfiguration": Match.object_like({"DestinationBucketName": Match.any_value()}),
        },
    )
    for bucket in of_type(resources, "AWS::S3::Bucket").values():
        assert bucket["Properties"]["PublicAccessBlockConfiguration"]["BlockPublicPolicy"]


def test_lifecycle_expires_shards_and_incomplete_uploads(synthesized):
    days = synthesized.stack.config.shard_expiry_days
    synthesized.template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like(
                            {"AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}
                        ),
                        Match.object_like(
                            {"Prefix": SHARDS_PREFIX, "ExpirationInDays": days, "Status": "Enabled"}
                        ),
                    ]
                )
            }
        },
    )


def test_every_bucket_denies_plain_http(resources):
    policies = of_type(resources, "AWS::S3::BucketPolicy").values()
    assert len(policies) == len(of_type(resources, "AWS::S3::Bucket"))
    for policy in policies:
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in statements
        )


def test_status_table_on_demand_pitr_kms_ttl_and_status_index(synthesized):
    synthesized.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "BillingMode": "PAY_PER_REQUEST",
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": Match.object_like({"SSEEnabled": True, "SSEType": "KMS"}),
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
            "KeySchema": [
                {"AttributeName": "run_id", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "GlobalSecondaryIndexes": [
                Match.object_like(
                    {
                        "IndexName": "by-status",
                        "KeySchema": [
                            {"AttributeName": "run_status", "KeyType": "HASH"},
                            {"AttributeName": "started_at", "KeyType": "RANGE"},
                        ],
                    }
                )
            ],
        },
    )


def test_lambdas_latest_python_json_logs_xray_own_roles(resources):
    functions = {
        k: v
        for k, v in of_type(resources, "AWS::Lambda::Function").items()
        if k.startswith("Functions")
    }
    assert len(functions) == len(STEPS), "one function per step of the registry"
    roles = set()
    for function in functions.values():
        props = function["Properties"]
        assert props["Runtime"] == "python3.14"
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["LoggingConfig"]["LogFormat"] == "JSON"
        assert "BATCHINFER_TABLE_NAME" in props["Environment"]["Variables"]
        roles.add(props["Role"]["Fn::GetAtt"][0])
    assert len(roles) == len(STEPS), "one least-privilege role per Lambda"


def test_lambdas_know_the_model_environment_R10_R21(synthesized, resources):
    """The job-preparing Lambda needs the model's Environment to know what the container
    will answer on /execution-parameters."""
    (model,) = of_type(resources, "AWS::SageMaker::Model").values()
    expected = model["Properties"]["PrimaryContainer"]["Environment"]
    (function,) = [
        f
        for f in of_type(resources, "AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == "prepare_job.handler"
    ]
    variables = function["Properties"]["Environment"]["Variables"]
    assert json.loads(variables["BATCHINFER_MODEL_ENVIRONMENT"]) == expected
    assert expected == dict(synthesized.stack.config.model_environment)


def test_model_has_network_isolation_and_the_image(synthesized):
    synthesized.template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "EnableNetworkIsolation": True,
            "PrimaryContainer": Match.object_like(
                {"Image": Match.any_value(), "ModelDataUrl": synthesized.stack.config.model_data}
            ),
        },
    )


def test_state_machine_iam_is_the_s4_s5_shape(synthesized, resources):
    prefix = synthesized.stack.config.job_prefix
    (policy,) = [
        p
        for k, p in of_type(resources, "AWS::IAM::Policy").items()
        if k.startswith("WorkflowStateMachineRoleDefaultPolicy")
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    by_action = {}
    for s in statements:
        for action in [s["Action"]] if isinstance(s["Action"], str) else s["Action"]:
            by_action.setdefault(action, []).append(s)
    for kind in ("Transform", "Processing"):
        (jobs,) = by_action[f"sagemaker:Create{kind}Job"]
        assert jobs["Resource"] == (
            f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:{kind.lower()}-job/{prefix}-*"
        ), "each engine's actions on its own jobs only"
        assert set(jobs["Action"]) == {
            f"sagemaker:{verb}{kind}Job" for verb in ("Create", "Describe", "Stop")
        } | {"sagemaker:AddTags"}
    assert by_action["sagemaker:ListTags"][0]["Resource"] == "*"
    (pass_role,) = by_action["iam:PassRole"]
    assert pass_role["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }
    (rules,) = by_action["events:PutRule"]
    assert sorted(rules["Resource"]) == [
        f"arn:aws:events:{REGION}:{ACCOUNT}:rule/StepFunctionsGetEventsForSageMaker{k}JobsRule"
        for k in ("Processing", "Transform")
    ]
    assert set(rules["Action"]) == {"events:PutTargets", "events:PutRule", "events:DescribeRule"}


def test_topic_is_kms_encrypted_and_tls_only(synthesized, resources):
    synthesized.template.has_resource_properties(
        "AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()}
    )
    (policy,) = of_type(resources, "AWS::SNS::TopicPolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements
    )
    synthesized.template.has_resource_properties(
        "AWS::SNS::Subscription",
        {"Protocol": "email", "Endpoint": "ml-platform-oncall@example.com"},
    )


def test_alarms_on_failed_timed_out_aborted_runs_and_lambda_errors(resources):
    alarms = of_type(resources, "AWS::CloudWatch::Alarm").values()
    metrics = sorted(a["Properties"]["MetricName"] for a in alarms)
    assert metrics.count("Errors") == len(STEPS) + 1, "every step's Lambda and the arrivals one"
    assert "ApproximateNumberOfMessagesVisible" in metrics, "arrivals in the dead-letter queue"
    assert {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"} <= set(metrics)
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"], "every alarm notifies the topic"
    assert len(of_type(resources, "AWS::CloudWatch::Dashboard")) == 1


def test_schedule_and_s3_arrival_trigger(synthesized, resources):
    schedules = {
        r["Properties"]["ScheduleExpression"]: r["Properties"]
        for r in of_type(resources, "AWS::Scheduler::Schedule").values()
    }
    nightly, weekly = schedules["cron(0 2 * * ? *)"], schedules["cron(0 4 ? * SUN *)"]
    assert nightly["ScheduleExpressionTimezone"] == "Europe/Dublin"
    # The stack's bucket by reference (its name is generated); a data source by its name.
    data_bucket = next(k for k in of_type(resources, "AWS::S3::Bucket") if "Data" in k)
    rendered = render(nightly["Target"]["Input"], {data_bucket: "generated-name"}, {})
    assert json.loads(rendered) == {"input": "s3://generated-name/input/nightly/", "merge": True}
    assert json.loads(weekly["Target"]["Input"]) == {
        "input": "s3://example-data-lake/scoring/weekly/",
        "output": "s3://example-reports/batchinfer/weekly/",
        "merge": True,
    }
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": Match.object_like(
                {
                    "source": ["aws.s3"],
                    "detail-type": ["Object Created"],
                    "detail": Match.object_like(
                        {"object": {"key": [{"prefix": "input/arrivals/"}]}}
                    ),
                }
            )
        },
    )
    (arrival_rule,) = [
        r["Properties"]
        for r in of_type(resources, "AWS::Events::Rule").values()
        if r["Properties"]["EventPattern"]["source"] == ["aws.s3"]
    ]
    (target,) = arrival_rule["Targets"]
    queue_id = target["Arn"]["Fn::GetAtt"][0]
    queue = resources[queue_id]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    dead_letters_id = queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == 5
    assert resources[dead_letters_id]["Properties"]["SqsManagedSseEnabled"] is True
    policies = of_type(resources, "AWS::SQS::QueuePolicy").values()
    for queue_ref in (queue_id, dead_letters_id):
        (policy,) = [p for p in policies if p["Properties"]["Queues"] == [{"Ref": queue_ref}]]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
        ), f"{queue_ref} refuses requests without TLS"
    (mapping,) = of_type(resources, "AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert mapping["Properties"]["BatchSize"] == 10_000
    assert mapping["Properties"]["MaximumBatchingWindowInSeconds"] == 60
    assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    function_id = mapping["Properties"]["FunctionName"]["Ref"]
    variables = resources[function_id]["Properties"]["Environment"]["Variables"]
    assert variables["BATCHINFER_TRIGGER_PREFIX"] == "input/arrivals/"
    assert json.loads(render(variables["BATCHINFER_TRIGGER_REQUEST"], {}, {})) == {"merge": True}
    assert (
        resources[queue_id]["Properties"]["VisibilityTimeout"]
        >= 6 * resources[function_id]["Properties"]["Timeout"]
    ), "AWS's advice for a Lambda event source"
    assert resources[function_id]["Properties"]["Timeout"] * 1000 > arrivals.TIME_LEFT_MS
    (table_id,) = of_type(resources, "AWS::DynamoDB::Table")
    assert variables["BATCHINFER_TRIGGER_TABLE"] == {"Ref": table_id}, "where arrivals are claimed"
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": Match.object_like(
                {
                    "source": ["aws.states"],
                    "detail": Match.object_like({"status": ["FAILED", "TIMED_OUT", "ABORTED"]}),
                }
            )
        },
    )
    synthesized.template.has_resource_properties(
        "Custom::S3BucketNotifications",
        {"NotificationConfiguration": {"EventBridgeConfiguration": {}}},
    )


def test_the_end_of_run_rule_keeps_what_it_could_not_record(resources):
    """An ended execution's event is never dropped: EventBridge's failed deliveries and the
    recorder's failures (after Lambda's retries of the asynchronous invocation) go to a
    dead-letter queue under the stack's key, TLS only, whose messages raise an alarm."""
    (rule,) = [
        r["Properties"]
        for r in of_type(resources, "AWS::Events::Rule").values()
        if r["Properties"]["EventPattern"]["source"] == ["aws.states"]
    ]
    (target,) = rule["Targets"]
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 8, "MaximumEventAgeInSeconds": 7200}
    queue_id = target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
    queue = resources[queue_id]["Properties"]
    (key_id,) = of_type(resources, "AWS::KMS::Key")
    assert queue["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert queue["MessageRetentionPeriod"] == 14 * 86400
    (invoke_config,) = of_type(resources, "AWS::Lambda::EventInvokeConfig").values()
    config = invoke_config["Properties"]
    assert config["FunctionName"] == {"Ref": target["Arn"]["Fn::GetAtt"][0]}
    assert config["Qualifier"] == "$LATEST", "the function the rule invokes"
    assert config["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": [queue_id, "Arn"]}}
    }
    assert (config["MaximumRetryAttempts"], config["MaximumEventAgeInSeconds"]) == (2, 21600)
    (policy,) = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in of_type(resources, "AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"] == [{"Ref": queue_id}]
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in policy
    ), "TLS only"
    assert any(
        s["Principal"] == {"Service": "events.amazonaws.com"} and s["Action"] == "sqs:SendMessage"
        for s in policy
    )
    key_statements = resources[key_id]["Properties"]["KeyPolicy"]["Statement"]
    (key_use,) = [s for s in key_statements if s.get("Sid") == "EventBridgeEndOfRunDeadLetters"]
    assert sorted(key_use["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert key_use["Condition"]["StringEquals"]["aws:SourceAccount"] == ACCOUNT
    (alarm,) = [
        a["Properties"]
        for a in of_type(resources, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["Dimensions"]
        == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}]
    ]
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible" and alarm["Threshold"] == 1
    assert alarm["AlarmActions"], "it notifies the topic"


def test_outputs_are_exported_and_mirrored_in_ssm(synthesized):
    outputs = synthesized.template_json["Outputs"]
    stack_name = synthesized.stack.stack_name
    for key in stack_outputs.ALL:
        assert outputs[key]["Export"]["Name"] == f"{stack_name}-{key}"
        synthesized.template.has_resource_properties(
            "AWS::SSM::Parameter", {"Name": f"/batchinfer/prod/{key}", "Type": "String"}
        )


def _statements(resources, role_logical_prefix: str) -> list[dict]:
    return [
        statement
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::IAM::Policy" and logical_id.startswith(role_logical_prefix)
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_permissions_the_first_real_run_needs(resources):
    """S3 copies of a specific version need GetObjectVersion (the bucket is versioned and a
    split pins the version it measured); a processing job's model input is an S3Prefix,
    which SageMaker lists; a namespace with a wildcard needs StringLike."""
    split = _statements(resources, "FunctionsSplitObjectRole")
    reads = next(s for s in split if s.get("Sid") == "ReadData")
    assert {"s3:GetObject", "s3:GetObjectVersion"} <= set(reads["Action"])
    jobs = {s.get("Sid"): s for s in _statements(resources, "ModelExecutionRole")}
    assert jobs["ListModelData0"]["Action"] == "s3:ListBucket"
    assert "s3:prefix" in jobs["ListModelData0"]["Condition"]["StringLike"]
    assert jobs["JobMetrics"]["Condition"] == {
        "StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}
    }


def test_only_plan_and_the_scoring_step_may_use_the_configured_endpoint(resources):
    """InvokeEndpoint for ScoreShard and DescribeEndpoint for Plan, each on the configured
    endpoint's ARN only (SageMaker ARNs are lowercase); no other role names either."""
    endpoint = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/row-sum"
    granted = {}
    for logical_id, policy in of_type(resources, "AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            actions = [actions] if isinstance(actions, str) else actions
            for action in actions:
                if action in ("sagemaker:InvokeEndpoint", "sagemaker:DescribeEndpoint"):
                    role = logical_id.split("Role")[0]
                    granted[action] = (role, render(statement["Resource"], {}, {}))
    assert granted == {
        "sagemaker:InvokeEndpoint": ("FunctionsScoreShard", endpoint),
        "sagemaker:DescribeEndpoint": ("FunctionsPlan", endpoint),
    }
