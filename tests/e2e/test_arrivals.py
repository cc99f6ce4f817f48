"""The S3 trigger end to end: arrivals go through EventBridge's rule to the SQS queue, the
event source mapping hands a batching window's messages to the arrivals Lambda, and each
folder of the batch becomes one run of the synthesized state machine that scores its new
objects once (R4: the run names its objects, as a ManifestFile does)."""

import json

from batchinfer.pipeline.storage.status_table import SUCCEEDED, StatusTable
from batchinfer.uris import parse_s3_uri
from tests.support.offline import OfflineStack
from tests.support.offline.arrivals import Batch
from tests.support.offline.lambdas import OutOfTime

FOLDERS = {"shop-a/": 20, "shop-b/": 20, "shop-c/2024/": 10}
ROWS = 3


def csv_rows(count: int, offset: int) -> bytes:
    return b"".join(f"{i},{i + 1},{2 * i}\n".encode() for i in range(offset, offset + count))


def arrive(stack: OfflineStack, folder: str, names: list[str]) -> None:
    for number, name in enumerate(names):
        stack.put(f"input/arrivals/{folder}{name}", csv_rows(ROWS, 100 * number))


def finished_runs(stack: OfflineStack, arns: list[str]) -> dict[str, dict]:
    """Each execution's RUN item once it has ended, by run id; each must have succeeded."""
    runs = {}
    for arn in arns:
        execution = stack.wait(arn)
        assert execution.status == "SUCCEEDED", execution.cause
        run_id = arn.rsplit(":", 1)[-1]
        runs[run_id] = StatusTable.named(stack.table_name).get_run(run_id)
        assert runs[run_id]["run_status"] == SUCCEEDED
    return runs


def scored(stack: OfflineStack, runs: dict[str, dict]) -> dict[str, int]:
    """Output records per input object (``<folder><name>``), over every run's outputs."""
    counts: dict[str, int] = {}
    for run in runs.values():
        output = parse_s3_uri(run["output"]).key
        folder = parse_s3_uri(run["input"]).key.removeprefix("input/arrivals/")
        for key in stack.keys(output):
            if key.endswith(".out"):
                name = folder + key[len(output) :].removesuffix(".out")
                lines = stack.get(f"s3://{stack.bucket}/{key}").count(b"\n")
                counts[name] = counts.get(name, 0) + lines
    return counts


def test_a_burst_of_50_arrivals_in_3_folders_is_3_runs_scoring_each_object_once(prod_stack):
    for folder, count in FOLDERS.items():
        arrive(prod_stack, folder, [f"part-{i:02}.csv" for i in range(count)])

    batch = prod_stack.poll_arrivals()
    assert batch is not None and len(batch.event["Records"]) == 50
    assert batch.failed == []
    assert prod_stack.poll_arrivals() is None, "the batch took every queued arrival"
    arns = prod_stack.executions()
    assert len(arns) == len(FOLDERS), "one run per folder, not one per object"
    runs = finished_runs(prod_stack, arns)
    assert sorted(run["input"] for run in runs.values()) == [
        f"s3://{prod_stack.bucket}/input/arrivals/{folder}" for folder in sorted(FOLDERS)
    ]
    expected = {
        f"{folder}part-{i:02}.csv": ROWS for folder, count in FOLDERS.items() for i in range(count)
    }
    assert scored(prod_stack, runs) == expected
    assert sum(run["records_in"] for run in runs.values()) == 50 * ROWS

    # SQS delivers a batch again when the deletes did not happen: nothing new starts.
    again = prod_stack.redeliver(batch)
    assert again.failed == []
    assert sorted(prod_stack.executions()) == sorted(arns)

    # A later batch for a folder that has runs already scores only its new objects.
    arrive(prod_stack, "shop-a/", ["late-1.csv", "late-2.csv"])
    late = prod_stack.poll_arrivals()
    assert late is not None and late.failed == []
    (new,) = set(prod_stack.executions()) - set(arns)
    (run,) = finished_runs(prod_stack, [new]).values()
    assert run["objects"] == 2 and run["records_in"] == 2 * ROWS
    assert scored(prod_stack, {"late": run}) == {
        "shop-a/late-1.csv": ROWS,
        "shop-a/late-2.csv": ROWS,
    }


def test_keys_s3_url_encodes_in_its_events_are_scored_under_their_own_names(prod_stack):
    """S3's event says "day+1/a%2Bb.csv" for the key "day 1/a+b.csv": the run reads that
    folder and scores that object, named as it is."""
    arrive(prod_stack, "day 1/", ["a+b.csv", "c (copy).csv"])
    batch = prod_stack.poll_arrivals()
    assert batch is not None and batch.failed == []
    keys = [json.loads(r["body"])["detail"]["object"]["key"] for r in batch.event["Records"]]
    assert sorted(keys) == [
        "input/arrivals/day+1/a%2Bb.csv",
        "input/arrivals/day+1/c+%28copy%29.csv",
    ]
    runs = finished_runs(prod_stack, prod_stack.executions())
    assert scored(prod_stack, runs) == {"day 1/a+b.csv": ROWS, "day 1/c (copy).csv": ROWS}


def test_a_message_that_is_no_arrival_is_a_batch_item_failure_then_a_dead_letter(prod_stack):
    arrival_queues = [
        u for k, u in prod_stack.queue_urls.items() if k.startswith("TriggersArrivals")
    ]
    (queue,) = [u for u in arrival_queues if "deadletters" not in u]
    (dead_letters,) = [u for u in arrival_queues if "deadletters" in u]
    bad = prod_stack.sqs.send_message(QueueUrl=queue, MessageBody="not an event")["MessageId"]
    arrive(prod_stack, "shop-a/", ["a.csv"])

    batch = prod_stack.poll_arrivals()
    assert batch is not None and batch.failed == [bad]
    (arn,) = prod_stack.executions()
    (run,) = finished_runs(prod_stack, [arn]).values()
    assert run["objects"] == 1, "the arrival beside the bad message started its run"

    redrive = json.loads(
        prod_stack.sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["RedrivePolicy"])[
            "Attributes"
        ]["RedrivePolicy"]
    )
    receives = 1
    while (again := prod_stack.poll_arrivals()) is not None:
        assert again.failed == [bad]
        receives += 1
    assert receives == redrive["maxReceiveCount"]
    (dead,) = prod_stack.sqs.receive_message(QueueUrl=dead_letters).get("Messages", [])
    assert dead["Body"] == "not an event"
    assert prod_stack.executions() == [arn], "the bad message started nothing"


def test_a_batch_out_of_time_and_delivered_again_regrouped_scores_each_object_once(prod_stack):
    """The invocation runs out of time after its first run: the other folders' messages
    are answered as failures. SQS then hands the whole batch again in two halves (as when
    an answer is lost) and the failed messages once more: the first run is not started
    again, the others take what the halves bring, and each object is scored once."""
    for folder in ("shop-a/", "shop-b/", "shop-c/"):
        arrive(prod_stack, folder, ["one.csv", "two.csv"])
    prod_stack.lambdas.faults.append(OutOfTime("arrivals", asks=1))

    batch = prod_stack.poll_arrivals()
    assert batch is not None and len(batch.failed) == 4, "two folders did not start"
    (first,) = prod_stack.executions()

    records = batch.event["Records"]
    for half in (records[:3], records[3:]):
        prod_stack.redeliver(Batch({"Records": half}, None))
    again = prod_stack.poll_arrivals()
    assert again is not None and again.failed == []
    assert sorted(r["messageId"] for r in again.event["Records"]) == sorted(batch.failed)
    arns = prod_stack.executions()
    assert first in arns and len(arns) <= 5, "one run per folder of each half at most"
    runs = finished_runs(prod_stack, arns)
    assert scored(prod_stack, runs) == {
        f"{folder}{name}": ROWS
        for folder in ("shop-a/", "shop-b/", "shop-c/")
        for name in ("one.csv", "two.csv")
    }
