"""Retrying one request: bounded attempts with exponential backoff, optionally with full
jitter (R20: ModelClientConfig bounds timeouts and retries, for transform jobs; throttling
and 5xx for real-time endpoints).

Standard library only.
"""

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from batchinfer.errors import ValidationError
from batchinfer.transform.record_errors import InvocationError

# Sends one request body and returns the response body, raising InvocationError (retryable
# or not) when the request fails.
Invoke = Callable[[bytes], bytes]


@dataclass(frozen=True)
class RetryPolicy:
    """Up to ``attempts`` tries in all for a retryable failure; before try ``n + 1`` it
    sleeps ``base_seconds * 2**(n - 1)``, at most ``cap_seconds``, or with ``jitter`` (full
    jitter) a uniform draw between 0 and that. A failure that is not retryable is raised at
    once."""

    attempts: int
    base_seconds: float = 0.1
    cap_seconds: float | None = None
    jitter: bool = False

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValidationError(f"retry attempts: {self.attempts} is not allowed; at least 1")
        if self.base_seconds < 0 or (self.cap_seconds is not None and self.cap_seconds < 0):
            raise ValidationError("retry backoff: seconds must not be negative")

    def delay(self, retry: int, draw: Callable[[], float] = random.random) -> float:
        """Seconds to sleep before retry number ``retry`` (0 for the first retry)."""
        ceiling: float = self.base_seconds * 2**retry
        if self.cap_seconds is not None:
            ceiling = min(ceiling, self.cap_seconds)
        return draw() * ceiling if self.jitter else ceiling

    def call(
        self, invoke: Invoke, body: bytes, sleep: Callable[[float], None] = time.sleep
    ) -> bytes:
        """``invoke(body)``, retried as this policy says; the last failure names how many
        attempts were made."""
        for attempt in range(self.attempts):
            try:
                return invoke(body)
            except InvocationError as exc:
                if not exc.retryable or attempt == self.attempts - 1:
                    if attempt:
                        raise InvocationError(
                            f"{exc.reason} (after {attempt + 1} attempts)",
                            status=exc.status,
                            retryable=exc.retryable,
                        ) from exc
                    raise
                sleep(self.delay(attempt))
        raise AssertionError("unreachable")
