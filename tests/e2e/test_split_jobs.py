"""Large gzip objects split by a Processing job running ``batchinfer split``, small ones by
the SplitObject Lambda, in one run (R3, R4, R11, R1): the shards and outputs equal a run
where the Lambda split everything, the run item records the threshold and the choice, a
split job run again leaves the same shards, and a failed split job fails the run naming
the object."""

import gzip
import json
from typing import Any

import pytest

from batchinfer.pipeline.jobs.split_job import SPLIT_ENTRYPOINT, SPLIT_NAME_MARK
from batchinfer.pipeline.storage.instance_leases import InstanceLeases
from batchinfer.pipeline.storage.status_table import FAILED, StatusTable
from tests.support.offline import (
    AnswerLost,
    LambdaFault,
    OfflineStack,
    ThrottledWait,
    offline_stack,
)

from .conftest import ADMISSION, INSTANCE_TYPE, synthesize
from .test_happy_path import csv_rows

# Streamed bytes (gzip: compressed size x 5) above this go to a split job.
THRESHOLD = 16 * 1024
INPUTS = {
    "big.csv.gz": gzip.compress(csv_rows(6000), mtime=0),  # about 20 KB compressed
    "small.csv.gz": gzip.compress(csv_rows(200, offset=9000), mtime=0),
}
REQUEST = {"shard_size": "16KiB", "compression_type": "Gzip", "merge": True}


@pytest.fixture(scope="session")
def split_job_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return synthesize("dev", tmp_path_factory.mktemp("cdk.out"), split_job_threshold="16KiB")


def run(stack: OfflineStack, run_id: str, inputs: dict[str, bytes] = INPUTS) -> Any:
    for name, data in inputs.items():
        stack.put(f"input/{run_id}/{name}", data)
    request = {"input": f"s3://{stack.bucket}/input/{run_id}/", "run_id": run_id, **REQUEST}
    return stack.run(request, run_id)


def objects(stack: OfflineStack, prefix: str) -> dict[str, bytes]:
    return {
        key[len(prefix) :]: stack.get(f"s3://{stack.bucket}/{key}") for key in stack.keys(prefix)
    }


def outputs(stack: OfflineStack, run_id: str) -> dict[str, Any]:
    """The run's outputs, and its _manifest.json's totals (the rest names the execution)."""
    found: dict[str, Any] = objects(stack, f"output/{run_id}/")
    found["_manifest.json"] = json.loads(found["_manifest.json"])["totals"]
    return found


def split_jobs(stack: OfflineStack) -> list[dict[str, Any]]:
    return [
        request
        for operation, request in stack.jobs.requests
        if operation == "CreateProcessingJob"
        and request["AppSpecification"]["ContainerEntrypoint"] == SPLIT_ENTRYPOINT
    ]


def test_sizes_above_the_threshold_go_to_a_split_job_with_the_same_results(
    split_job_template, template, row_sum_archive, aws_env
):
    assert len(INPUTS["big.csv.gz"]) * 5 > THRESHOLD >= len(INPUTS["small.csv.gz"]) * 5
    with offline_stack(template, row_sum_archive) as lambda_only:
        execution = run(lambda_only, "mixed")
        assert execution.status == "SUCCEEDED", execution.cause
        assert split_jobs(lambda_only) == []
        expected_shards = objects(lambda_only, "shards/mixed/")
        expected_outputs = outputs(lambda_only, "mixed")
    with offline_stack(split_job_template, row_sum_archive) as stack:
        execution = run(stack, "mixed")
        assert execution.status == "SUCCEEDED", execution.cause
        (job,) = split_jobs(stack)
        assert job["AppSpecification"]["ContainerArguments"][:3] == [
            f"s3://{stack.bucket}/input/mixed/big.csv.gz",
            "--output",
            f"s3://{stack.bucket}/shards/mixed/",
        ]
        assert job["ProcessingJobName"].startswith("bi-dev-mixed-s-")
        assert [event["input"] for event in stack.lambdas.events_of("split_object")] == [
            f"s3://{stack.bucket}/input/mixed/small.csv.gz"
        ]
        assert objects(stack, "shards/mixed/") == expected_shards
        assert outputs(stack, "mixed") == expected_outputs
        run_item = StatusTable.named(stack.table_name).get_run("mixed")
        assert run_item["split_job_threshold"] == THRESHOLD
        assert run_item["split_jobs"] == 1 and run_item["objects"] == 2
    big_shards = [key for key in expected_shards if key.startswith("big.part-")]
    assert len(big_shards) > 1, "the big object is cut into several shards"


@pytest.mark.parametrize(
    "fault",
    [ThrottledWait(), AnswerLost("SdkClientException"), AnswerLost("ServiceUnavailable")],
    ids=["throttled-poll", "no-response", "5xx"],
)
def test_a_split_job_whose_answer_was_lost_is_adopted_not_run_again(
    split_job_template, row_sum_archive, aws_env, fault
):
    """The split job was created and runs, but the task's answer was lost (its Create's
    response, or the .sync task's poll throttled after the job did its work): the job is
    found by the attempt's name and waited for, so one split job runs, is paid for, and
    leaves the shards a plain run leaves; the run succeeds and is announced once."""
    with offline_stack(split_job_template, row_sum_archive) as stack:
        execution = run(stack, "once", {"big.csv.gz": INPUTS["big.csv.gz"]})
        assert execution.status == "SUCCEEDED", execution.cause
        once = objects(stack, "shards/once/")
    with offline_stack(split_job_template, row_sum_archive) as stack:
        stack.jobs.faults.append(fault)
        execution = run(stack, "once", {"big.csv.gz": INPUTS["big.csv.gz"]})
        assert execution.status == "SUCCEEDED", execution.cause
        (job,) = split_jobs(stack)
        split_started = [n for n in stack.jobs.started if f"-{SPLIT_NAME_MARK}-" in n]
        assert split_started == [job["ProcessingJobName"]], "one split job started"
        assert job["ProcessingJobName"] in stack.jobs.looked_up, "found by its name"
        twice = objects(stack, "shards/once/")
        assert len([key for key in twice if key.startswith("big.part-")]) > 1
        assert twice == once
        notifications, events = stack.announced()
        assert len(notifications) == 1 and len(events) == 1


def test_a_failed_split_job_fails_the_run_naming_the_object(
    split_job_template, row_sum_archive, aws_env
):
    broken = b"\x1f\x8b\x08\x00" + bytes(range(256)) * 20  # gzip header, then no deflate data
    with offline_stack(split_job_template, row_sum_archive) as stack:
        execution = run(stack, "broken", {"broken.csv.gz": broken})
        assert execution.status == "FAILED"
        assert "broken.csv.gz" in execution.cause, execution.cause
        assert len(split_jobs(stack)) == 1, "a failed job is not retried"
        run_item = StatusTable.named(stack.table_name).get_run("broken")
        assert run_item["run_status"] == FAILED
        assert "broken.csv.gz" in run_item["cause"]
        assert stack.jobs.requests == [("CreateProcessingJob", split_jobs(stack)[0])]


# A budget of 2 instances of the split jobs' type, which the runs' jobs use too.
SPLIT_BUDGET = 2


@pytest.fixture(scope="session")
def budgeted_split_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    admission = ADMISSION | {"instance_budget": {INSTANCE_TYPE: SPLIT_BUDGET}}
    return synthesize(
        "dev",
        tmp_path_factory.mktemp("cdk.out"),
        split_job_threshold="16KiB",
        split_instance_type=INSTANCE_TYPE,
        admission=admission,
    )


def big_objects(count: int) -> dict[str, bytes]:
    return {
        f"big-{n}.csv.gz": gzip.compress(csv_rows(6000, offset=10_000 * n), mtime=0)
        for n in range(count)
    }


def test_split_jobs_lease_their_instances_from_the_budget_the_runs_share(
    budgeted_split_template, row_sum_archive, aws_env
):
    """Four split jobs (the Map would start them all at once) and the run's own job of 2
    instances, on a budget of 2 instances of that type: each split job leases its instance
    first, so no more than 2 ever run; every lease is returned when the run ends."""
    with offline_stack(budgeted_split_template, row_sum_archive) as stack:
        inputs = big_objects(4)
        for name, data in inputs.items():
            stack.put(f"input/leased/{name}", data)
        request = {
            "input": f"s3://{stack.bucket}/input/leased/",
            "run_id": "leased",
            "instance_count": SPLIT_BUDGET,
            **REQUEST,
        }
        execution = stack.run(request, "leased")
        assert execution.status == "SUCCEEDED", execution.cause
        assert len(split_jobs(stack)) == 4
        assert stack.jobs.most_in_flight[INSTANCE_TYPE] <= SPLIT_BUDGET
        assert stack.jobs.in_flight[INSTANCE_TYPE] == 0
        leases = InstanceLeases(StatusTable.named(stack.table_name).table)
        assert leases.held(INSTANCE_TYPE) == {} and leases.queue(INSTANCE_TYPE) == []


def test_a_failed_split_job_returns_every_lease_of_the_run(
    budgeted_split_template, row_sum_archive, aws_env
):
    """One object's split job fails beside others that lease and run: the item's own
    lease is returned on its failure path, and the failure recorder returns whatever the
    run's other split jobs still held when the Map was stopped."""
    broken = b"\x1f\x8b\x08\x00" + bytes(range(256)) * 20
    with offline_stack(budgeted_split_template, row_sum_archive) as stack:
        execution = run(stack, "fails", big_objects(3) | {"broken.csv.gz": broken})
        assert execution.status == "FAILED"
        assert "broken.csv.gz" in execution.cause, execution.cause
        assert stack.jobs.most_in_flight[INSTANCE_TYPE] <= SPLIT_BUDGET
        leases = InstanceLeases(StatusTable.named(stack.table_name).table)
        assert leases.held(INSTANCE_TYPE) == {} and leases.queue(INSTANCE_TYPE) == []


@pytest.mark.parametrize("step", ["acquire_split_instance", "release_split_instance"])
def test_a_split_lease_step_run_again_takes_and_returns_its_instance_once(
    budgeted_split_template, row_sum_archive, aws_env, step
):
    """Lambda.ServiceException after the handler ran (its answer lost): Step Functions runs
    the step again; the object's lease key makes the second acquire take nothing more and
    the second release return nothing twice, so the budget ends whole."""
    with offline_stack(budgeted_split_template, row_sum_archive) as stack:
        stack.lambdas.faults.append(LambdaFault(step, "after"))
        execution = run(stack, "again", big_objects(1))
        assert execution.status == "SUCCEEDED", execution.cause
        assert len(stack.lambdas.events_of(step)) >= 2, "the step ran again"
        assert len(split_jobs(stack)) == 1
        leases = InstanceLeases(StatusTable.named(stack.table_name).table)
        assert leases.held(INSTANCE_TYPE) == {} and leases.queue(INSTANCE_TYPE) == []


def test_an_object_a_split_job_leaves_whole_is_copied_under_the_shard_prefix(
    split_job_template, row_sum_archive, aws_env
):
    """A split job that leaves its object whole (one shard, no header line): CopyUnsplit
    copies it under the run's shard prefix (R4: one ManifestFile prefix), by the ETag the job
    measured, and the job scores every record of it."""
    with offline_stack(split_job_template, row_sum_archive) as stack:
        stack.put("input/whole/big.csv.gz", INPUTS["big.csv.gz"])
        source = f"s3://{stack.bucket}/input/whole/big.csv.gz"
        request = {"input": source, "run_id": "whole", "shards": 1, "compression_type": "Gzip"}
        execution = stack.run(request, "whole")
        assert execution.status == "SUCCEEDED", execution.cause
        assert len(split_jobs(stack)) == 1
        assert [event["input"] for event in stack.lambdas.events_of("copy_unsplit")] == [source]
        assert stack.get(f"s3://{stack.bucket}/shards/whole/big.csv.gz") == INPUTS["big.csv.gz"]
        output = stack.get(f"s3://{stack.bucket}/output/whole/big.csv.gz.out")
        assert output.count(b"\n") == 6000
