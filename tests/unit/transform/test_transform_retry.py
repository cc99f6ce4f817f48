"""Bounded retries with exponential backoff (R20) and full jitter (real-time endpoints)."""

import pytest

from batchinfer.errors import ValidationError
from batchinfer.transform.record_errors import InvocationError
from batchinfer.transform.retry import RetryPolicy


def failing(times: int, status: int = 503, retryable: bool = True):
    calls = []

    def invoke(body: bytes) -> bytes:
        calls.append(body)
        if len(calls) <= times:
            raise InvocationError("busy", status=status, retryable=retryable)
        return b"ok:" + body

    return invoke, calls


def test_r20_doubling_backoff_without_jitter():
    policy = RetryPolicy(attempts=4, base_seconds=0.5)
    assert [policy.delay(n) for n in range(3)] == [0.5, 1.0, 2.0]
    slept: list[float] = []
    invoke, calls = failing(3)
    assert policy.call(invoke, b"x", sleep=slept.append) == b"ok:x"
    assert len(calls) == 4 and slept == [0.5, 1.0, 2.0]


def test_full_jitter_draws_between_zero_and_the_capped_exponential():
    policy = RetryPolicy(attempts=10, base_seconds=1.0, cap_seconds=5.0, jitter=True)
    assert [policy.delay(n, draw=lambda: 1.0) for n in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.delay(3, draw=lambda: 0.25) == 1.25
    assert all(0 <= policy.delay(n) <= 5.0 for n in range(20))


def test_attempts_are_bounded_and_the_last_failure_says_how_many():
    invoke, calls = failing(10)
    with pytest.raises(InvocationError, match=r"HTTP 503: busy \(after 3 attempts\)"):
        RetryPolicy(attempts=3, base_seconds=0).call(invoke, b"x")
    assert len(calls) == 3


def test_a_failure_that_is_not_retryable_is_raised_at_once():
    invoke, calls = failing(1, status=400, retryable=False)
    with pytest.raises(InvocationError, match=r"^HTTP 400: busy$"):
        RetryPolicy(attempts=5, base_seconds=0).call(invoke, b"x")
    assert len(calls) == 1


def test_a_policy_needs_at_least_one_attempt():
    with pytest.raises(ValidationError, match="retry attempts: 0"):
        RetryPolicy(attempts=0)
