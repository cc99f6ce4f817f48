"""What a job attempt left in the state: ``{"name", "status"}`` when the task ended, or the
``Error``/``Cause`` a Catch recorded (the Cause of a Failed .sync job is its Describe*Job
response, spec S2)."""

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JobOutcome:
    name: str | None
    status: str | None
    error: str | None = None
    reason: str | None = None

    @classmethod
    def of(cls, job: Any) -> "JobOutcome":
        if not isinstance(job, dict):
            return cls(None, None)
        if "Error" not in job:
            return cls(job.get("name"), job.get("status"))
        cause = job.get("Cause") or ""
        try:
            described = json.loads(cause)
        except ValueError:
            described = None
        if not isinstance(described, dict):
            return cls(None, None, job["Error"], cause or None)
        name = described.get("TransformJobName") or described.get("ProcessingJobName")
        status = described.get("TransformJobStatus") or described.get("ProcessingJobStatus")
        reason = (
            described.get("FailureReason")
            or described.get("ExitMessage")
            or described.get("errorMessage")
            or cause
        )
        return cls(name, status, job["Error"], reason)

    def describe(self) -> str:
        what = f"job {self.name}" if self.name else "the job"
        if self.error is None:
            return f"{what} ended {self.status or 'without a status'}"
        return f"{what} failed ({self.error}): {self.reason or 'no reason given'}"
