"""Limits a model server takes from its environment (spec C6: the platform sets SAGEMAKER_BATCH and
the job's batch values; C8: a batch request may take 3600 s, a real-time one 60 s and 6 MB), read
without heavy imports."""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from batchinfer.errors import ValidationError
from batchinfer.transform.bad_records import MAX_BAD_RECORDS_VAR, NO_LIMIT
from batchinfer.transform.settings import DEFAULT_MAX_PAYLOAD_MB, MAX_PAYLOAD_X_CONCURRENCY_MB
from batchinfer.units import MIB

# The BatchStrategy the server answers on /execution-parameters (spec C5: the container may answer
# batch settings on /execution-parameters).
BATCH_STRATEGY = "MULTI_RECORD"
DEFAULT_TIMEOUT = 3600
PAYLOAD_VAR = "SAGEMAKER_MAX_PAYLOAD_IN_MB"
TIMEOUT_VAR = "SAGEMAKER_MODEL_SERVER_TIMEOUT"
WORKERS_VAR = "SAGEMAKER_MODEL_SERVER_WORKERS"
# The records of one forward pass (batchinfer's own: --max-batch-records), and how many when it
# is unset: a large request predicted in one pass builds arrays of its size at every step of a
# Pipeline (a 1,048,576-row Parquet row group of 12 numbers and 3 one-hot categories: 500 MB
# for its encoded features), and took twice as long as in passes of 16,384-131,072 records.
MAX_BATCH_RECORDS_VAR = "BATCHINFER_MAX_BATCH_RECORDS"
DEFAULT_BATCH_RECORDS = 65_536
MAX_WORKERS = 1024


def int_from_env(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """The whole number ``env[name]`` in ``low..high``, or ``default`` when unset or empty."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValidationError(f"{name}={text!r} is not a whole number") from None
    if not low <= value <= high:
        raise ValidationError(f"{name}={value} is outside {low}..{high}")
    return value


def configured_workers(env: Mapping[str, str]) -> int | None:
    """The model server workers SAGEMAKER_MODEL_SERVER_WORKERS asks for (None: unset)."""
    return int_from_env(env, WORKERS_VAR, 0, 1, MAX_WORKERS) or None


def max_bad_records(env: Mapping[str, str]) -> int | None:
    """BATCHINFER_MAX_BAD_RECORDS: the most records of one request the server sets aside
    (None: quarantine is off; 0 is a valid allowance, which sets none aside)."""
    if not env.get(MAX_BAD_RECORDS_VAR):
        return None
    return int_from_env(env, MAX_BAD_RECORDS_VAR, 0, 0, NO_LIMIT)


def max_batch_records(env: Mapping[str, str]) -> int | None:
    """BATCHINFER_MAX_BATCH_RECORDS: the most records of one forward pass,
    :data:`DEFAULT_BATCH_RECORDS` when unset; None (a whole request a pass) when it is 0."""
    return int_from_env(env, MAX_BATCH_RECORDS_VAR, DEFAULT_BATCH_RECORDS, 0, 2**31 - 1) or None


def forward_batch_set(env: Mapping[str, str]) -> bool:
    """Whether the job sets BATCHINFER_MAX_BATCH_RECORDS (as :func:`int_from_env` reads it:
    not blank), so that :func:`max_batch_records` is its choice rather than the default."""
    return bool(env.get(MAX_BATCH_RECORDS_VAR, "").strip())


def max_payload_mb(env: Mapping[str, str]) -> int:
    """MaxPayloadInMB: SAGEMAKER_MAX_PAYLOAD_IN_MB (0..100, 0 = no limit) or 6."""
    return int_from_env(env, PAYLOAD_VAR, DEFAULT_MAX_PAYLOAD_MB, 0, 100)


def request_timeout(env: Mapping[str, str]) -> int:
    """Seconds one request may take: SAGEMAKER_MODEL_SERVER_TIMEOUT or 3600 (spec C8)."""
    return int_from_env(env, TIMEOUT_VAR, DEFAULT_TIMEOUT, 1, 86400)


@dataclass(frozen=True)
class ServerLimits:
    """What ``/execution-parameters`` advertises and ``/invocations`` enforces.

    ``max_payload_mb`` is in MiB (1 MB = 1,048,576 bytes, the larger reading, so every body a
    client sized by either reading fits); 0 means no limit (spec R8: a record larger than
    MaxPayloadInMB fails its file).
    """

    workers: int
    max_payload_mb: int

    @property
    def max_body_bytes(self) -> int | None:
        return self.max_payload_mb * MIB if self.max_payload_mb else None

    def execution_parameters(self) -> dict[str, Any]:
        """MaxConcurrentTransforms = workers (capped so that it times MaxPayloadInMB stays
        within 100, spec R1: a request outside CreateTransformJob's limits is refused),
        BatchStrategy MULTI_RECORD, MaxPayloadInMB."""
        concurrency = self.workers
        if self.max_payload_mb:
            concurrency = max(
                1, min(concurrency, MAX_PAYLOAD_X_CONCURRENCY_MB // self.max_payload_mb)
            )
        return {
            "MaxConcurrentTransforms": concurrency,
            "BatchStrategy": BATCH_STRATEGY,
            "MaxPayloadInMB": self.max_payload_mb,
        }


def execution_parameters(workers: int, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What ``GET /execution-parameters`` answers for a server of ``workers`` workers whose
    environment is ``env`` (default: this process's)."""
    env = os.environ if env is None else env
    return ServerLimits(workers, max_payload_mb(env)).execution_parameters()
