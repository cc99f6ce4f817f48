"""How many history events a run's execution can write, against the 25,000 events a
Standard execution may have (Step Functions quotas: "Maximum execution history size",
https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html); an execution
that reaches it fails.

The counts are per piece of the definition in ``stacks/workflow.py``, each an upper bound
that ``tests/e2e/test_admission.py`` checks against the events of real executions:

- one turn of the admission Wait loop: AcquireInstances (task: entered, scheduled, started,
  succeeded, exited), InstancesGranted (choice: entered, exited), WaitForInstances (wait:
  entered, exited);
- one job round without waiting: AcquireInstances, InstancesGranted, RunJob (the Parallel,
  PrepareJob, ChooseJob, the .sync job task), ReleaseInstances, Verify, AllShardsDone, and
  CheckJobError when the job failed, WaitForCapacity when it failed for want of capacity;
- one more attempt of RunJob (its Retry on SageMaker quota and throttling errors): the
  branch again (ParallelStateStarted, PrepareJob, ChooseJob, the job task,
  ClassifyApiError), the lookup of the job whose Create may have gone through (FindJob,
  then FindTransformJob or FindProcessingJob: entered, exited and 3 events a try, tried
  ``1 + FIND_JOB_RETRIES`` times), and TransientApiError: 29 events;
- the rest: the execution's start and end, Plan, SplitInputs, Collect, Finalize or the
  failure path.
"""

import math

HISTORY_LIMIT = 25_000
# What a configuration may use of the limit: Lambda throttling retries (up to 8 a task)
# and the Distributed Map's own events stay in the rest.
HISTORY_SHARE = 0.8
EVENTS_PER_WAIT = 9
EVENTS_PER_ROUND = 42
EVENTS_PER_JOB_RETRY = 30
EVENTS_OUTSIDE_ROUNDS = 40


def waits_per_round(max_wait_seconds: int, poll_seconds: int) -> int:
    """The most turns of the Wait loop before one job: the wait bound is checked at each
    acquire, so the turn that passes it is one more."""
    return math.ceil(max_wait_seconds / poll_seconds) + 1


def longest_history(
    *, max_rounds: int, retry_attempts: int, max_wait_seconds: int, poll_seconds: int
) -> int:
    """The most history events one execution can write: every round waits as long as
    admission allows and uses every retry of its job."""
    per_round = (
        waits_per_round(max_wait_seconds, poll_seconds) * EVENTS_PER_WAIT
        + EVENTS_PER_ROUND
        + retry_attempts * EVENTS_PER_JOB_RETRY
    )
    return EVENTS_OUTSIDE_ROUNDS + max_rounds * per_round


def history_allowance() -> int:
    """The events a configuration may plan for (the share of the limit)."""
    return int(HISTORY_LIMIT * HISTORY_SHARE)
