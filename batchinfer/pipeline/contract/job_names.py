"""Job names: one new, valid name per job attempt (spec R1: a request outside CreateTransformJob's
limits is refused).

A name is ``<base>-r<round>-<token>``: ``base`` is the stack's job prefix plus a slug of
the run id (with a hash when the slug had to be shortened or changed), ``round`` the
resubmission round and ``token`` 8 random hex digits, new for every attempt, so a retried
or resubmitted job never reuses a name. The IAM policies of the state machine allow
``transform-job/<prefix>-*`` and ``processing-job/<prefix>-*`` only.
"""

import hashlib
import re
import uuid

from batchinfer.pipeline.contract.limits import MAX_ROUNDS
from batchinfer.transform.settings import validate_job_name

RUN_ID_TAG = "batchinfer:run-id"  # on every job and model a run creates
MAX_JOB_NAME_LENGTH = 63
MAX_PREFIX_LENGTH = 20
PREFIX_PATTERN = re.compile(r"[a-z](-?[a-z0-9])*")
TOKEN_LENGTH = 8
# "-r" + round digits + "-" + token
SUFFIX_LENGTH = 2 + len(str(MAX_ROUNDS)) + 1 + TOKEN_LENGTH
MAX_BASE_LENGTH = MAX_JOB_NAME_LENGTH - SUFFIX_LENGTH
_HASH_LENGTH = 8


def job_base(prefix: str, run_id: str) -> str:
    """``<prefix>-<slug of run id>``, at most :data:`MAX_BASE_LENGTH` characters.

    The slug keeps letters and digits and turns runs of anything else into one hyphen.
    When that changed or shortened the run id, a hash of the run id is appended so two run
    ids never share a base.
    """
    slug = re.sub(r"[^A-Za-z0-9]+", "-", run_id).strip("-")
    room = MAX_BASE_LENGTH - len(prefix) - 1
    if slug == run_id and len(slug) <= room:
        return f"{prefix}-{slug}"
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:_HASH_LENGTH]
    short = slug[: room - _HASH_LENGTH - 1].strip("-")
    return f"{prefix}-{short}-{digest}" if short else f"{prefix}-{digest}"


def job_name(base: str, round_number: int, token: str | None = None) -> str:
    """A new job name for ``round_number`` of the run whose names start with ``base``."""
    if not 1 <= round_number <= MAX_ROUNDS:
        raise ValueError(f"round {round_number} is outside 1..{MAX_ROUNDS}")
    token = token or uuid.uuid4().hex[:TOKEN_LENGTH]
    return validate_job_name(f"{base}-r{round_number}-{token}")
