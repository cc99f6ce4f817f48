"""The S3 trigger's path in moto: the template's SQS queues made from their own properties,
S3 "Object Created" events delivered to the queues their rules target, as EventBridge would,
and the Lambda service's SQS event source mapping emulated one batch at a time."""

import itertools
import json
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

from tests.support.offline.lambdas import Lambdas
from tests.support.offline.template import ACCOUNT, REGION

# S3's sequencers grow with each PUT of a key; one counter for all keys keeps that.
_SEQUENCERS = itertools.count(1)


@dataclass
class Batch:
    """One invocation of the mapping: the SQS event the handler got and its answer."""

    event: dict[str, Any]
    answer: Any

    @property
    def failed(self) -> list[str]:
        """The message ids the handler reported as batch item failures."""
        return [item["itemIdentifier"] for item in self.answer.get("batchItemFailures", [])]


def create_queues(
    sqs: Any, queues: dict[str, dict[str, Any]], render: Callable[[Any], Any], names: dict[str, str]
) -> dict[str, str]:
    """Each queue of the template (dead-letter queues first) with its visibility timeout and
    redrive policy; the queue URL by logical id."""
    urls = {}
    ordered = sorted(queues.items(), key=lambda item: "RedrivePolicy" in item[1]["Properties"])
    for logical_id, resource in ordered:
        props = render(resource["Properties"])
        attributes = {
            name: str(props[key]) if not isinstance(props[key], dict) else json.dumps(props[key])
            for key, name in (
                ("VisibilityTimeout", "VisibilityTimeout"),
                ("MessageRetentionPeriod", "MessageRetentionPeriod"),
                ("RedrivePolicy", "RedrivePolicy"),
            )
            if key in props
        }
        urls[logical_id] = sqs.create_queue(QueueName=names[logical_id], Attributes=attributes)[
            "QueueUrl"
        ]
    return urls


def object_created(bucket: str, key: str, size: int, etag: str) -> dict[str, Any]:
    """The EventBridge event S3 sends for a created object (Amazon S3 User Guide,
    "EventBridge event message structure"), its key URL-encoded as a form is ("red
    flower.jpg" is "red+flower.jpg"; the decoding of AWS's Lambda Powertools for these
    events, ``unquote_plus``, undoes it), with the hexadecimal ``sequencer`` that tells the
    PUTs of a key apart."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": ACCOUNT,
        "region": REGION,
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": {
                "key": quote_plus(key, safe="/"),
                "size": size,
                "etag": etag.strip('"'),
                "sequencer": f"{next(_SEQUENCERS):018X}",
            },
            "reason": "PutObject",
        },
    }


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """Whether an S3 rule's pattern (source, detail-type, bucket name, key prefix) takes
    ``event``."""
    detail = pattern.get("detail", {})
    prefixes = [p["prefix"] for p in detail.get("object", {}).get("key", [{"prefix": ""}])]
    return (
        event["source"] in pattern.get("source", [])
        and event["detail-type"] in pattern.get("detail-type", [])
        and event["detail"]["bucket"]["name"] in detail.get("bucket", {}).get("name", [])
        and any(event["detail"]["object"]["key"].startswith(p) for p in prefixes)
    )


class EventSourceMapping:
    """The Lambda service's SQS poller for one mapping of the template: it receives with
    the function's role, invokes the handler with an SQS event and deletes the messages
    the answer does not report failed."""

    def __init__(
        self,
        sqs: Any,
        mapping: dict[str, Any],
        queue_url: str,
        queue_arn: str,
        function_arn: str,
        role_arn: str,
        lambdas: Lambdas,
        as_role: Callable[[str | None], AbstractContextManager[Any]],
    ) -> None:
        self.sqs = sqs
        self.batch_size: int = mapping["BatchSize"]
        self.reports_failures = "ReportBatchItemFailures" in mapping.get(
            "FunctionResponseTypes", []
        )
        self.queue_url, self.queue_arn = queue_url, queue_arn
        self.function_arn, self.role_arn = function_arn, role_arn
        self.lambdas = lambdas
        self.as_role = as_role

    def poll(self) -> Batch | None:
        """One batch: every message visible now, up to the batch size (what a batching
        window gathers); None when the queue holds none. Messages the handler failed become
        visible again at once, standing for their visibility timeout running out."""
        messages: list[dict[str, Any]] = []
        with self.as_role(self.role_arn):
            while len(messages) < self.batch_size:
                got = self.sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=min(10, self.batch_size - len(messages)),
                    MessageSystemAttributeNames=["All"],
                ).get("Messages", [])
                if not got:
                    break
                messages += got
        if not messages:
            return None
        batch = self.invoke([self._record(m) for m in messages])
        failed = (
            set(batch.failed) if batch.answer is not None else {m["MessageId"] for m in messages}
        )
        done = [m for m in messages if m["MessageId"] not in failed]
        with self.as_role(self.role_arn):
            for start in range(0, len(done), 10):
                self.sqs.delete_message_batch(
                    QueueUrl=self.queue_url,
                    Entries=[
                        {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                        for n, m in enumerate(done[start : start + 10])
                    ],
                )
        for message in messages:
            if message["MessageId"] in failed:
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url,
                    ReceiptHandle=message["ReceiptHandle"],
                    VisibilityTimeout=0,
                )
        return batch

    def invoke(self, records: list[dict[str, Any]]) -> Batch:
        """The handler's answer to an SQS event of ``records`` (None: it raised, and the
        whole batch returns to the queue)."""
        event = {"Records": records}
        response = self.lambdas.call(self.function_arn, event)
        answer = None if response.get("FunctionError") else response["Payload"]
        if not self.reports_failures and answer is not None:
            answer = {"batchItemFailures": []}
        return Batch(event, answer)

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": {},
            "md5OfBody": message["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": self.queue_arn,
            "awsRegion": REGION,
        }
