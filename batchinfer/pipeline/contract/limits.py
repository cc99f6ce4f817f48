"""Limits the stack config and the Lambdas agree on."""

# Job rounds per run: the first job plus resubmissions of missing shards.
MAX_ROUNDS = 9
# The smallest shard size worth a SageMaker request stream.
MIN_SHARD_SIZE = 1024 * 1024
