"""What the state machine's role may do beyond what CDK grants for its states: the IAM of
the ``.sync`` SageMaker integrations (spec S4: the IAM a state machine needs to run transform jobs;
S5: the same for processing jobs), written out by hand because the job tasks are CustomStates, and
the cdk-nag acknowledgements of the role's wildcards."""

from aws_cdk import Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn

from batchinfer.engines import ENGINES
from batchinfer.pipeline.contract.layout import MAP_RESULTS_PREFIX, RUNS_PREFIX
from stacks.config import PipelineConfig
from stacks.functions import Functions
from stacks.nag import acknowledge, resource_finding
from stacks.storage import Storage


def job_arns(machine: sfn.StateMachine, config: PipelineConfig) -> list[str]:
    """The jobs the pipeline may run: every job of each engine named with the stack's
    prefix (R1: a request outside CreateTransformJob's limits is refused)."""
    stack = Stack.of(machine)
    return [
        stack.format_arn(
            service="sagemaker", resource=f"{kind}-job", resource_name=f"{config.job_prefix}-*"
        )
        for kind in ENGINES
    ]


def grant_workflow_access(
    machine: sfn.StateMachine,
    *,
    config: PipelineConfig,
    storage: Storage,
    job_roles: list[iam.IRole],
) -> None:
    """Create, describe and stop the stack's jobs, pass the jobs' roles to them (the model's;
    the split jobs'), manage the rules .sync polls through, and let SageMaker encrypt job
    volumes and outputs."""
    stack = Stack.of(machine)
    role = machine.role

    def rule_arn(kind: str) -> str:
        return stack.format_arn(
            service="events",
            resource="rule",
            resource_name=f"StepFunctionsGetEventsForSageMaker{kind}JobsRule",
        )

    for engine, arn in zip(ENGINES, job_arns(machine, config), strict=True):
        kind = engine.title()
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid=f"Run{kind}Jobs",
                actions=[
                    f"sagemaker:Create{kind}Job",
                    f"sagemaker:Describe{kind}Job",
                    f"sagemaker:Stop{kind}Job",
                    "sagemaker:AddTags",
                ],
                resources=[arn],
            )
        )
    role.add_to_principal_policy(
        iam.PolicyStatement(sid="ListJobTags", actions=["sagemaker:ListTags"], resources=["*"])
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="PassJobRole",
            actions=["iam:PassRole"],
            resources=[role.role_arn for role in job_roles],
            conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
        )
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="SyncJobEvents",
            actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"],
            resources=[rule_arn("Transform"), rule_arn("Processing")],
        )
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="EncryptJobVolumesAndOutputs",
            actions=["kms:CreateGrant"],
            resources=[storage.key.key_arn],
            conditions={"Bool": {"kms:GrantIsForAWSResource": "true"}},
        )
    )
    # SageMaker checks a job's VolumeKmsKeyId and output KmsKeyId with the caller's
    # credentials; a DescribeKey request carries no kms:GrantIsForAWSResource, so it has a
    # statement of its own.
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="DescribeJobKey", actions=["kms:DescribeKey"], resources=[storage.key.key_arn]
        )
    )
    # The split Map reads its SSE-KMS item list and writes its results by multipart upload.
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="UseDataKey",
            actions=["kms:Decrypt", "kms:GenerateDataKey"],
            resources=[storage.key.key_arn],
        )
    )


def acknowledge_workflow_access(
    machine: sfn.StateMachine, *, config: PipelineConfig, storage: Storage, functions: Functions
) -> None:
    """The wildcards of the state machine's role, finding by finding."""
    acknowledge(
        machine,
        "AwsSolutions-IAM5",
        "Job names are made per attempt (<prefix>-<run>-r<round>-<token>), so jobs are "
        "allowed by the stack's job-name prefix; sagemaker:ListTags and the X-Ray trace "
        "calls have no resource scope; the Lambdas are invoked with any version "
        "qualifier; the split Map reads its run's input list and writes its results in "
        "the data bucket (runs/ and runs/_map-results/) and starts only its own child "
        "executions.",
        findings=[
            *(resource_finding(machine, arn) for arn in job_arns(machine, config)),
            "Resource::*",
            *(
                resource_finding(machine, storage.data_arn(prefix))
                for prefix in (RUNS_PREFIX, MAP_RESULTS_PREFIX)
            ),
            *(
                resource_finding(machine, f"{fn.function_arn}:*")
                for fn in functions.functions.values()
            ),
            *(resource_finding(machine, arn) for arn in _map_execution_arns(machine)),
        ],
    )


def _map_execution_arns(machine: sfn.StateMachine) -> list[str]:
    """The child-execution ARNs CDK's DistributedMapPolicy grants on."""
    stack = Stack.of(machine)
    name = Fn.select(6, Fn.split(":", machine.state_machine_arn))
    base = f"arn:{stack.partition}:states:{stack.region}:{stack.account}:execution:{name}"
    return [f"{base}:*", f"{base}/*:*"]
