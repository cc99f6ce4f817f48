"""Limits the stack config and the Lambdas agree on."""

# Job rounds per run: the first job plus resubmissions of missing shards.
MAX_ROUNDS = 9
# The smallest shard size worth a SageMaker request stream.
MIN_SHARD_SIZE = 1024 * 1024


def capacity_wait_seconds(first: int, number: int) -> int:
    """The wait before round ``number + 1`` when the job of round ``number`` failed for want
    of instances: ``first`` after the first round, doubling each round after."""
    return first << (number - 1)  # doubled number - 1 times
