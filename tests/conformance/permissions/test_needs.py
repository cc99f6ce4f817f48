"""The call-to-IAM rules of the permission audit (docs/permissions.md): each call needs
its action on its resource, the non-obvious ones as AWS documents them, and every action
named exists in AWS's catalogue of IAM actions."""

import fnmatch

import pytest
from policy_sentry.querying.all import get_all_actions

from tests.support.permissions.needs import Keys, needs
from tests.support.permissions.recorder import Call

KEY = "arn:aws:kms:eu-west-1:123456789012:key/k"
KEYS = Keys(
    of_bucket=lambda b: KEY if b == "data" else None,
    of_table=lambda t: KEY,
    of_topic=lambda t: KEY,
)
ACTIONS = {a.lower() for a in get_all_actions()}


def _needs(service: str, operation: str, **params) -> list[tuple[str, str, dict]]:
    found = needs(Call("r", service, operation, params), KEYS)
    return [(n.action, n.resource, dict(n.context)) for n in found]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            ("s3", "ListObjectsV2", {"Bucket": "data", "Prefix": "input/a/"}),
            [("s3:ListBucket", "arn:aws:s3:::data", {"s3:prefix": "input/a/"})],
        ),
        (
            ("s3", "HeadObject", {"Bucket": "lake", "Key": "k"}),
            [("s3:GetObject", "arn:aws:s3:::lake/k", {})],
        ),
        (
            ("s3", "GetObject", {"Bucket": "data", "Key": "k", "VersionId": "v"}),
            [
                ("s3:GetObjectVersion", "arn:aws:s3:::data/k", {}),
                ("kms:Decrypt", KEY, {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}),
            ],
        ),
        (
            (
                "s3",
                "UploadPartCopy",
                {"Bucket": "lake", "Key": "t", "CopySource": "data/s?versionId=v"},
            ),
            [
                ("s3:PutObject", "arn:aws:s3:::lake/t", {}),
                ("s3:GetObjectVersion", "arn:aws:s3:::data/s", {}),
                ("kms:Decrypt", KEY, {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}),
            ],
        ),
        (
            (
                "s3",
                "CreateMultipartUpload",
                {"Bucket": "lake", "Key": "t", "SSEKMSKeyId": "arn:k2"},
            ),
            [
                ("s3:PutObject", "arn:aws:s3:::lake/t", {}),
                ("kms:GenerateDataKey", "arn:k2", {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}),
                ("kms:Decrypt", "arn:k2", {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}),
            ],
        ),
        (
            ("dynamodb", "Query", {"TableName": "t", "IndexName": "by-status"}),
            [
                (
                    "dynamodb:Query",
                    "arn:aws:dynamodb:eu-west-1:123456789012:table/t/index/by-status",
                    {},
                ),
                ("kms:Decrypt", KEY, {"kms:ViaService": "dynamodb.eu-west-1.amazonaws.com"}),
            ],
        ),
        (
            (
                "sagemaker",
                "CreateModel",
                {"ModelName": "bi-Run-model", "ExecutionRoleArn": "arn:role", "Tags": [{}]},
            ),
            [
                (
                    "sagemaker:CreateModel",
                    "arn:aws:sagemaker:eu-west-1:123456789012:model/bi-run-model",
                    {},
                ),
                (
                    "sagemaker:AddTags",
                    "arn:aws:sagemaker:eu-west-1:123456789012:model/bi-run-model",
                    {},
                ),
                ("iam:PassRole", "arn:role", {"iam:PassedToService": "sagemaker.amazonaws.com"}),
            ],
        ),
        (
            ("sagemaker", "ListModelPackages", {"ModelPackageGroupName": "g"}),
            [("sagemaker:ListModelPackages", "*", {})],
        ),
        (("lambda", "Invoke", {"FunctionName": "arn:f"}), [("lambda:InvokeFunction", "arn:f", {})]),
        (
            (
                "sqs",
                "DeleteMessageBatch",
                {"QueueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/q", "Entries": []},
            ),
            [("sqs:DeleteMessage", "arn:aws:sqs:eu-west-1:123456789012:q", {})],
        ),
        (
            ("sqs", "ReceiveMessage", {"QueueUrl": "https://sqs.eu-west-1.amazonaws.com/1/q"}),
            [("sqs:ReceiveMessage", "arn:aws:sqs:eu-west-1:1:q", {})],
        ),
        (
            ("sns", "Publish", {"TopicArn": "arn:t", "Message": "m"}),
            [
                ("sns:Publish", "arn:t", {}),
                ("kms:GenerateDataKey", KEY, {"kms:ViaService": "sns.eu-west-1.amazonaws.com"}),
                ("kms:Decrypt", KEY, {"kms:ViaService": "sns.eu-west-1.amazonaws.com"}),
            ],
        ),
    ],
)
def test_calls_need_the_documented_actions(call, expected):
    service, operation, params = call
    assert _needs(service, operation, **params) == expected
    for action, _, _ in expected:
        assert action.lower() in ACTIONS, f"{action} is not an IAM action"


def test_every_action_the_stack_grants_exists(synthesized):
    """A misspelt action in a policy allows nothing, silently: each one the template names
    (wildcards included) must match an action of AWS's catalogue."""
    found = []
    for resource in synthesized.template_json["Resources"].values():
        props = resource.get("Properties", {})
        documents = [props.get(k) for k in ("PolicyDocument", "KeyPolicy")]
        documents += [p["PolicyDocument"] for p in props.get("Policies", [])]
        for document in filter(None, documents):
            for statement in document["Statement"]:
                actions = statement["Action"]
                found += [actions] if isinstance(actions, str) else actions
    unknown = sorted({a for a in found if not fnmatch.filter(ACTIONS, a.lower())})
    assert found and unknown == []
