"""The policy evaluator of the permission audit on a small template: Allow with IAM
wildcards and conditions, an explicit Deny, the TLS-only bucket policy, and a key policy
that does or does not hand decisions to IAM."""

import pytest

from tests.support.permissions.needs import Need
from tests.support.permissions.policies import Policies

ROLE = "arn:aws:iam::123456789012:role/r"
ROOT = "arn:aws:iam::123456789012:root"
KEY = "arn:aws:kms:eu-west-1:123456789012:key/k"
OTHER_KEY = "arn:aws:kms:eu-west-1:123456789012:key/other"


def _template(key_principal: str) -> dict:
    statements = [
        {
            "Effect": "Allow",
            "Action": ["s3:Get*", "s3:PutObject"],
            "Resource": "arn:aws:s3:::b/in?/*",
        },
        {
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": "arn:aws:s3:::b",
            "Condition": {"StringLike": {"s3:prefix": ["in*"]}},
        },
        {"Effect": "Deny", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::b/in1/secret"},
        {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": [KEY, OTHER_KEY]},
        {
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": ROLE,
            "Condition": {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
        },
    ]
    return {
        "Resources": {
            "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
            "Policy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "Roles": [{"Ref": "Role"}],
                    "PolicyDocument": {"Statement": statements},
                },
            },
            "BucketPolicy": {
                "Type": "AWS::S3::BucketPolicy",
                "Properties": {
                    "Bucket": "b",
                    "PolicyDocument": {
                        "Statement": [
                            {
                                "Effect": "Deny",
                                "Principal": {"AWS": "*"},
                                "Action": "s3:*",
                                "Resource": "arn:aws:s3:::b/*",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        ]
                    },
                },
            },
            "Key": {
                "Type": "AWS::KMS::Key",
                "Properties": {
                    "KeyPolicy": {
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"AWS": key_principal},
                                "Action": "kms:*",
                                "Resource": "*",
                            }
                        ]
                    }
                },
            },
        }
    }


def _render(value):
    if value == {"Fn::GetAtt": ["Key", "Arn"]}:
        return KEY
    return value


@pytest.mark.parametrize(
    ("need", "allowed", "reason"),
    [
        (Need("s3:GetObjectVersion", "arn:aws:s3:::b/in1/x"), True, "Policy[0]"),
        (Need("S3:getobject", "arn:aws:s3:::b/in12/x"), False, "no statement"),  # ? is one char
        (Need("s3:PutObject", "arn:aws:s3:::b/in1/secret"), False, "denied by Policy[2]"),
        (Need("s3:ListBucket", "arn:aws:s3:::b", (("s3:prefix", "in2/"),)), True, "Policy[1]"),
        (Need("s3:ListBucket", "arn:aws:s3:::b", (("s3:prefix", "out/"),)), False, "no statement"),
        (Need("s3:ListBucket", "arn:aws:s3:::b"), False, "no statement"),  # no prefix given
        (
            Need("iam:PassRole", ROLE, (("iam:PassedToService", "lambda.amazonaws.com"),)),
            False,
            "no statement",
        ),
        (
            Need("iam:PassRole", ROLE, (("iam:PassedToService", "sagemaker.amazonaws.com"),)),
            True,
            "Policy[4]",
        ),
        (Need("kms:Decrypt", KEY), True, "Policy[3]"),
    ],
)
def test_identity_policies_with_wildcards_conditions_and_denies(need, allowed, reason):
    decision = Policies(_template(ROOT), _render).decide("Role", ROLE, need)
    assert decision.allowed is allowed
    assert reason in decision.reason


def test_a_key_policy_that_names_neither_the_account_nor_the_role_refuses():
    policies = Policies(_template("arn:aws:iam::123456789012:role/someone-else"), _render)
    decision = policies.decide("Role", ROLE, Need("kms:Decrypt", KEY))
    assert not decision.allowed and "key policy" in decision.reason
    # A key this template does not own is the identity policy's alone to allow.
    assert policies.decide("Role", ROLE, Need("kms:Decrypt", OTHER_KEY)).allowed


def test_the_tls_only_bucket_policy_denies_only_plain_http():
    policies = Policies(_template(ROOT), _render)
    assert policies.decide("Role", ROLE, Need("s3:GetObject", "arn:aws:s3:::b/in1/x")).allowed
    insecure = Need("s3:GetObject", "arn:aws:s3:::b/in1/x", (("aws:SecureTransport", "false"),))
    decision = policies.decide("Role", ROLE, insecure)
    assert not decision.allowed and "bucket policy" in decision.reason
