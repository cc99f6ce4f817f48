"""Grants no call of the e2e scenarios uses, kept on purpose: a pattern (``fnmatch``, over
``<policy>[<sid>] <action> on <resource>``) and why the grant stays. Most are calls AWS
makes itself with a runtime's role, which the offline harness does not make; the report
fails on an unused grant no pattern covers, and on a pattern that covers none."""

_SERVICE_WRITES_LOGS = (
    "The Lambda service writes each function's own log stream and, with active tracing, "
    "its X-Ray segments, with the function's role, outside the handler."
)
_MULTIPART_ABORT = (
    "Called only when a multipart upload fails half way (the split, the merge, SageMaker's "
    "output upload): it removes the parts. No scenario breaks an upload mid-way."
)
_SAGEMAKER_ITSELF = (
    "SageMaker calls this with the job's role (pulling the image, writing the job's logs "
    "and metrics, listing a processing job's S3Prefix model input, encrypting outputs with "
    "the job's KmsKeyId); the offline jobs run the engine in-process instead."
)
_STEP_FUNCTIONS_ITSELF = (
    "Step Functions calls this with the state machine's role: log delivery and X-Ray "
    "tracing, the .sync integration's EventBridge rule and job tags, SageMaker's check of "
    "the stack key for a job's volume and outputs and its grants on it, the Map's child "
    "executions and its result upload's parts, a stopped execution's Stop*Job. moto's "
    "interpreter does these inside itself."
)

_SQS_POLLER = (
    "The Lambda service's SQS poller (the event source mapping) calls these with the "
    "function's role: it reads the queue's URL and attributes when the mapping starts and "
    "changes a message's visibility while its batch runs; the offline mapping only receives "
    "and deletes."
)

ACKNOWLEDGED: dict[str, str] = {
    "Functions*Role*WriteOwnLogs* logs:*": _SERVICE_WRITES_LOGS,
    "Functions*Role* xray:Put*": _SERVICE_WRITES_LOGS,
    "TriggersArrivalsFunctionRole*WriteOwnLogs* logs:*": _SERVICE_WRITES_LOGS,
    "TriggersArrivalsFunctionRole* xray:Put*": _SERVICE_WRITES_LOGS,
    "TriggersArrivalsFunctionRole* sqs:ChangeMessageVisibility on *": _SQS_POLLER,
    "TriggersArrivalsFunctionRole* sqs:GetQueue* on *": _SQS_POLLER,
    "* s3:AbortMultipartUpload on *": _MULTIPART_ABORT,
    "CliAccess*StageInputs* s3:PutObject on *": (
        "Users stage inputs under input/ with their own tools (aws s3 cp); the CLI takes "
        "s3:// inputs as they are."
    ),
    "CliAccess*UseDataKey* kms:GenerateDataKey on *": (
        "Staging an input writes an SSE-KMS object with the stack's key."
    ),
    "FunctionsPlanRole*ListModelPackages* sagemaker:ListModelPackages on *": (
        "A model package group's newest approved version: the e2e package scenario names a "
        "version; the group path runs in tests/integration/pipeline/test_run_model.py."
    ),
    "FunctionsCopyUnsplitRole*ReadSources*": (
        "CopyUnsplit runs only after a split job, which the prod example (the one with data "
        "sources) has none of; the split-job scenarios read the data bucket's input/."
    ),
    "FunctionsSplitObjectRole*ReadSources* s3:GetObjectVersion on *": (
        "A versioned data source is copied by the version the split measured; the "
        "scenarios' data lake bucket is unversioned."
    ),
    "ModelExecutionRole* ecr:*": _SAGEMAKER_ITSELF,
    "ModelExecutionRole*JobLogs* logs:*": _SAGEMAKER_ITSELF,
    "ModelExecutionRole*JobMetrics* cloudwatch:PutMetricData on *": _SAGEMAKER_ITSELF,
    "ModelExecutionRole*ListModelData* s3:ListBucket on *": _SAGEMAKER_ITSELF,
    "ModelExecutionRole*UseDataKey* kms:Encrypt on *": _SAGEMAKER_ITSELF,
    "WorkflowStateMachineDistributedMapPolicy* states:*": _STEP_FUNCTIONS_ITSELF,
    "WorkflowStateMachineRole* s3:ListMultipartUploadParts on *": _STEP_FUNCTIONS_ITSELF,
    "WorkflowStateMachineRole* logs:*": _STEP_FUNCTIONS_ITSELF,
    "WorkflowStateMachineRole* xray:*": _STEP_FUNCTIONS_ITSELF,
    "WorkflowStateMachineRole*EncryptJobVolumesAndOutputs* kms:*": _STEP_FUNCTIONS_ITSELF,
    "WorkflowStateMachineRole*DescribeJobKey* kms:DescribeKey on *": _STEP_FUNCTIONS_ITSELF,
    "WorkflowStateMachineRole*ListJobTags* sagemaker:ListTags on *": _STEP_FUNCTIONS_ITSELF,
    "WorkflowStateMachineRole*SyncJobEvents* events:*": _STEP_FUNCTIONS_ITSELF,
    "WorkflowStateMachineRole*Run*Jobs* sagemaker:Stop*Job on *": _STEP_FUNCTIONS_ITSELF,
    "WorkflowStateMachineRole* lambda:InvokeFunction on <Functions*.Arn>:*": (
        "CDK's grant covers the functions' versions and aliases too; the tasks invoke the "
        "unqualified ARN."
    ),
}
