"""What IAM allows each recorded call needs: the actions, on which resources, with which
request context. A call's own action is the operation's name under the service's IAM
prefix (``s3:PutObject``); only the calls whose needs differ are ruled here, each with the
AWS documentation that says so (docs/permissions.md lists them):

- S3 (Amazon S3 User Guide, "Required permissions for Amazon S3 API operations"):
  ListObjectsV2 needs ``s3:ListBucket`` on the bucket, with ``s3:prefix`` in the context;
  HeadObject needs ``s3:GetObject``; GetObject / HeadObject / CopySource with a VersionId
  need ``s3:GetObjectVersion``; the multipart calls and UploadPartCopy need ``s3:PutObject``
  on the target, UploadPartCopy and CopyObject ``s3:GetObject`` on the source.
- SSE-KMS ("Using server-side encryption with AWS KMS keys"): reading an object needs
  ``kms:Decrypt``, writing ``kms:GenerateDataKey``, a multipart upload both.
- DynamoDB with a customer managed key, SNS topics with one ("Encryption at rest" of each
  service): reads need ``kms:Decrypt``, writes and publishes also ``kms:GenerateDataKey``;
  a Query on an index is authorised on the index ARN.
- SQS (Amazon SQS Developer Guide, "Amazon SQS API permissions: Actions and resource
  reference"): a batch call needs the action of its single form (DeleteMessageBatch:
  ``sqs:DeleteMessage``), on the queue's ARN.
- SageMaker: a role handed to a model or job needs ``iam:PassRole`` with
  ``iam:PassedToService`` sagemaker.amazonaws.com; Tags on a create need
  ``sagemaker:AddTags``; ListModelPackages has no resource scope; DescribeEndpoint and
  sagemaker-runtime InvokeEndpoint are ``sagemaker:`` actions on the endpoint's ARN
  (Service Authorization Reference, "Actions defined by Amazon SageMaker").
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.support.aws import ACCOUNT, REGION
from tests.support.permissions.recorder import Call

# The botocore service name -> the IAM service prefix, where they differ.
_PREFIX = {"stepfunctions": "states", "sagemaker-runtime": "sagemaker"}
_DYNAMODB_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
_S3_GET = {"GetObject", "HeadObject"}
_S3_PUT = {"PutObject", "UploadPart", "CompleteMultipartUpload", "CreateMultipartUpload"}


@dataclass(frozen=True)
class Need:
    """One action on one resource, with the request context conditions may test."""

    action: str
    resource: str
    context: tuple[tuple[str, str], ...] = ()
    call: Call | None = field(default=None, compare=False)

    def __str__(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.context)
        return f"{self.action} on {self.resource}{extra}"


@dataclass(frozen=True)
class Keys:
    """Which KMS key encrypts each bucket, table and topic (None: none or AWS's own)."""

    of_bucket: Callable[[str], str | None]
    of_table: Callable[[str], str | None]
    of_topic: Callable[[str], str | None]

    def remembered(self) -> "Keys":
        """These lookups, each answer kept: for one pass over calls already made, in which
        no bucket, table or topic changes (each lookup is an API call to moto)."""
        return Keys(
            functools.cache(self.of_bucket),
            functools.cache(self.of_table),
            functools.cache(self.of_topic),
        )


def needs(call: Call, keys: Keys) -> list[Need]:
    """The needs of ``call``: its action(s) and resources, and the key uses it implies."""
    rule = _RULES.get(call.service)
    found = rule(call, keys) if rule else [_need(call, _prefix(call) + ":" + call.operation, "*")]
    return [Need(n.action, n.resource, n.context, call) for n in found]


def _prefix(call: Call) -> str:
    return _PREFIX.get(call.service, call.service)


def _need(call: Call, action: str, resource: str, **context: str) -> Need:
    return Need(action, resource, tuple(sorted(context.items())), call)


def _s3(call: Call, keys: Keys) -> list[Need]:
    p, op = call.params, call.operation
    bucket = p.get("Bucket", "")
    objects = f"arn:aws:s3:::{bucket}/{p.get('Key', '')}"
    # A write names its key, or the bucket's default encryption applies.
    key = p.get("SSEKMSKeyId") or keys.of_bucket(bucket)
    if op in ("ListObjectsV2", "ListObjects"):
        return [
            _need(
                call,
                "s3:ListBucket",
                f"arn:aws:s3:::{bucket}",
                **{"s3:prefix": p.get("Prefix", "")},
            )
        ]
    if op in _S3_GET:
        action = "s3:GetObjectVersion" if p.get("VersionId") else "s3:GetObject"
        found = [_need(call, action, objects)]
        if op == "GetObject" and key:
            found.append(_via_s3(call, "kms:Decrypt", key))
        return found
    if op in _S3_PUT or op in ("UploadPartCopy", "CopyObject"):
        found = [_need(call, "s3:PutObject", objects)]
        if op in ("UploadPartCopy", "CopyObject"):
            found += _copy_source(call, keys)
        if key and op in ("PutObject", "CopyObject", "UploadPartCopy", "UploadPart"):
            found.append(_via_s3(call, "kms:GenerateDataKey", key))
        if key and op == "CreateMultipartUpload":
            found += [_via_s3(call, "kms:GenerateDataKey", key), _via_s3(call, "kms:Decrypt", key)]
        return found
    return [_need(call, f"s3:{op}", objects)]


def _copy_source(call: Call, keys: Keys) -> list[Need]:
    source = call.params["CopySource"]
    if isinstance(source, str):
        path, _, query = source.partition("?versionId=")
        bucket, _, key = path.lstrip("/").partition("/")
        source = {"Bucket": bucket, "Key": key, **({"VersionId": query} if query else {})}
    action = "s3:GetObjectVersion" if source.get("VersionId") else "s3:GetObject"
    found = [_need(call, action, f"arn:aws:s3:::{source['Bucket']}/{source['Key']}")]
    key = keys.of_bucket(source["Bucket"])
    if key:
        found.append(_via_s3(call, "kms:Decrypt", key))
    return found


def _via_s3(call: Call, action: str, key: str) -> Need:
    return _need(call, action, key, **{"kms:ViaService": f"s3.{REGION}.amazonaws.com"})


def _dynamodb(call: Call, keys: Keys) -> list[Need]:
    p, op = call.params, call.operation
    tables = list(p.get("RequestItems", {})) if op.startswith("Batch") else [p.get("TableName", "")]
    found = []
    for table in tables:
        arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}"
        resource = f"{arn}/index/{p['IndexName']}" if p.get("IndexName") else arn
        found.append(_need(call, f"dynamodb:{op}", resource))
        key = keys.of_table(table)
        if key:
            via = {"kms:ViaService": f"dynamodb.{REGION}.amazonaws.com"}
            found.append(_need(call, "kms:Decrypt", key, **via))
            if op in _DYNAMODB_WRITES:
                found.append(_need(call, "kms:GenerateDataKey", key, **via))
    return found


def _sns(call: Call, keys: Keys) -> list[Need]:
    topic = call.params.get("TopicArn", "*")
    found = [_need(call, f"sns:{call.operation}", topic)]
    key = keys.of_topic(topic)
    if key and call.operation == "Publish":
        via = {"kms:ViaService": f"sns.{REGION}.amazonaws.com"}
        found += [
            _need(call, "kms:GenerateDataKey", key, **via),
            _need(call, "kms:Decrypt", key, **via),
        ]
    return found


def _events(call: Call, keys: Keys) -> list[Need]:
    if call.operation != "PutEvents":
        return [_need(call, f"events:{call.operation}", "*")]
    buses = {entry.get("EventBusName", "default") for entry in call.params["Entries"]}
    return [
        _need(
            call,
            "events:PutEvents",
            bus if bus.startswith("arn:") else f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{bus}",
        )
        for bus in sorted(buses)
    ]


def _sqs(call: Call, keys: Keys) -> list[Need]:
    # https://sqs.<region>.amazonaws.com/<account>/<name> -> arn:aws:sqs:<region>:<account>:<name>
    account, name = call.params["QueueUrl"].rstrip("/").split("/")[-2:]
    action = call.operation.removesuffix("Batch")
    return [_need(call, f"sqs:{action}", f"arn:aws:sqs:{REGION}:{account}:{name}")]


def _sagemaker(call: Call, keys: Keys) -> list[Need]:
    p, op = call.params, call.operation
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}"
    if op in ("CreateModel", "DeleteModel", "DescribeModel"):
        resource = f"{arn}:model/{p['ModelName'].lower()}"
    elif op in ("CreateTransformJob", "DescribeTransformJob", "StopTransformJob"):
        resource = f"{arn}:transform-job/{p['TransformJobName'].lower()}"
    elif op in ("CreateProcessingJob", "DescribeProcessingJob", "StopProcessingJob"):
        resource = f"{arn}:processing-job/{p['ProcessingJobName'].lower()}"
    elif op == "DescribeEndpoint":
        resource = f"{arn}:endpoint/{p['EndpointName'].lower()}"
    elif op == "DescribeModelPackage":
        name = p["ModelPackageName"]
        resource = name if name.startswith("arn:") else f"{arn}:model-package/{name.lower()}"
    else:
        resource = "*"
    found = [_need(call, f"sagemaker:{op}", resource)]
    if op.startswith("Create") and p.get("Tags"):
        found.append(_need(call, "sagemaker:AddTags", resource))
    role = p.get("ExecutionRoleArn") or p.get("RoleArn")
    if role:
        found.append(
            _need(call, "iam:PassRole", role, **{"iam:PassedToService": "sagemaker.amazonaws.com"})
        )
    return found


def _sagemaker_runtime(call: Call, keys: Keys) -> list[Need]:
    """InvokeEndpoint is sagemaker:InvokeEndpoint on the endpoint (a variant or inference
    component it names narrows where the request goes, not what it needs)."""
    name = call.params.get("EndpointName", "*").lower()
    return [
        _need(
            call,
            f"sagemaker:{call.operation}",
            f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/{name}",
        )
    ]


def _stepfunctions(call: Call, keys: Keys) -> list[Need]:
    p = call.params
    resource = p.get("stateMachineArn") or p.get("executionArn") or "*"
    return [_need(call, f"states:{call.operation}", resource)]


def _cloudformation(call: Call, keys: Keys) -> list[Need]:
    stack = call.params.get("StackName", "*")
    # A stack's ARN ends with an id CloudFormation makes: any will do for the check.
    stack_id = "00000000-0000-0000-0000-000000000000"
    resource = (
        stack
        if stack.startswith("arn:")
        else f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{stack}/{stack_id}"
    )
    return [_need(call, f"cloudformation:{call.operation}", resource)]


def _lambda(call: Call, keys: Keys) -> list[Need]:
    action = "lambda:InvokeFunction" if call.operation == "Invoke" else f"lambda:{call.operation}"
    return [_need(call, action, call.params["FunctionName"])]


_RULES: dict[str, Callable[[Call, Keys], list[Need]]] = {
    "s3": _s3,
    "dynamodb": _dynamodb,
    "sns": _sns,
    "events": _events,
    "sagemaker": _sagemaker,
    "sagemaker-runtime": _sagemaker_runtime,
    "stepfunctions": _stepfunctions,
    "cloudformation": _cloudformation,
    "lambda": _lambda,
    "sqs": _sqs,
}


def describe(call: Call) -> str:
    """``s3.GetObject(Bucket=..., Key=...)`` with the identifying parameters."""
    shown = {k: v for k, v in call.params.items() if isinstance(v, str) and len(v) < 200}
    arguments = ", ".join(f"{k}={v}" for k, v in sorted(shown.items()))
    return f"{call.service}.{call.operation}({arguments})"
