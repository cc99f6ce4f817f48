"""The names of the stack's outputs: CloudFormation output keys (exported as
``<stack>-<key>``) and SSM parameters (``/batchinfer/<env>/<key>``). The CLI finds a
stack's resources through these, never through hard-coded resource names."""

DATA_BUCKET = "DataBucketName"
LOG_BUCKET = "AccessLogBucketName"
STATE_MACHINE_ARN = "StateMachineArn"
TABLE_NAME = "StatusTableName"
TOPIC_ARN = "NotificationTopicArn"
EVENT_BUS_NAME = "EventBusName"
EVENT_SOURCE = "EventSource"
IMAGE_URI = "ImageUri"
MODEL_NAME = "ModelName"
KMS_KEY_ARN = "KmsKeyArn"
CLI_POLICY_ARN = "CliPolicyArn"  # the managed policy CLI users need

ALL = (
    DATA_BUCKET,
    LOG_BUCKET,
    STATE_MACHINE_ARN,
    TABLE_NAME,
    TOPIC_ARN,
    EVENT_BUS_NAME,
    EVENT_SOURCE,
    IMAGE_URI,
    MODEL_NAME,
    KMS_KEY_ARN,
    CLI_POLICY_ARN,
)


def export_name(stack_name: str, key: str) -> str:
    return f"{stack_name}-{key}"


def parameter_name(env: str, key: str) -> str:
    return f"/batchinfer/{env}/{key}"
